package org.fluss.py.flink.datastream;

import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.catalog.FlinkConversions;
import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.sink.SinkSettings;

/** Builds a {@link FlussRowSink} (what PyFlink's {@code FlussSink.builder()} wraps); the schema comes from the cluster. */
public final class FlussSinkBuilder {
    private String bootstrapServers;
    private final java.util.Map<String, String> clientOptions = new java.util.HashMap<>();
    private String database = "fluss";
    private String table;
    private boolean ignoreDelete;

    /** A client option, e.g. {@code client.security.protocol} = SASL and the SASL username and password. */
    public FlussSinkBuilder setOption(String key, String value) {
        clientOptions.put(key, value);
        return this;
    }

    private org.fluss.py.flink.client.ConnectionConfig connection() {
        return org.fluss.py.flink.client.ConnectionConfig.from(bootstrapServers,
                org.apache.flink.configuration.Configuration.fromMap(clientOptions), null);
    }

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
        try (FlussClient client = new FlussClient(connection())) {
            rowType = FlinkConversions.rowType(client.tableInfo(path));
        }
        return new FlussRowSink(connection(), path, rowType,
                new SinkSettings("all", Integer.MAX_VALUE, true, "STICKY", true, 16384, ignoreDelete));
    }
}
