package org.fluss.py.flink.datastream;

import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.catalog.FlinkConversions;
import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.sink.SinkSettings;

/** Builds a {@link FlussRowSink} (what PyFlink's {@code FlussSink.builder()} wraps); the schema comes from the cluster. */
public final class FlussSinkBuilder {
    private String bootstrapServers;
    private String database = "fluss";
    private String table;
    private boolean ignoreDelete;

    public FlussSinkBuilder setBootstrapServers(String servers) {
        this.bootstrapServers = servers;
        return this;
    }

    public FlussSinkBuilder setDatabase(String database) {
        this.database = database;
        return this;
    }

    public FlussSinkBuilder setTable(String table) {
        this.table = table;
        return this;
    }

    public FlussSinkBuilder setIgnoreDelete(boolean ignoreDelete) {
        this.ignoreDelete = ignoreDelete;
        return this;
    }

    public FlussRowSink build() {
        if (table == null) {
            throw new IllegalArgumentException("FlussSink: the table is not set (setTable)");
        }
        TablePath path = new TablePath(database, table);
        RowType rowType;
        try (FlussClient client = new FlussClient(bootstrapServers)) {
            rowType = FlinkConversions.rowType(client.tableInfo(path));
        }
        return new FlussRowSink(bootstrapServers, path, rowType,
                new SinkSettings("all", Integer.MAX_VALUE, true, "STICKY", true, 16384, ignoreDelete));
    }
}
