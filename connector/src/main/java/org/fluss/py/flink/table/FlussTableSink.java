package org.fluss.py.flink.table;

import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.SinkV2Provider;
import org.apache.flink.table.connector.sink.abilities.SupportsPartitioning;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.sink.FlussSink;
import org.fluss.py.flink.sink.SinkSettings;

import java.util.Map;

/** INSERT INTO a Fluss log table (append-only). */
public class FlussTableSink implements DynamicTableSink, SupportsPartitioning {
    private final String bootstrapServers;
    private final TablePath path;
    private final RowType rowType;
    private final SinkSettings settings;

    FlussTableSink(String bootstrapServers, TablePath path, RowType rowType, SinkSettings settings) {
        this.bootstrapServers = bootstrapServers;
        this.path = path;
        this.rowType = rowType;
        this.settings = settings;
    }

    @Override
    public ChangelogMode getChangelogMode(ChangelogMode requestedMode) {
        return ChangelogMode.insertOnly();
    }

    @Override
    public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
        return SinkV2Provider.of(new FlussSink(bootstrapServers, path, rowType, settings));
    }

    /**
     * Static partitions ({@code INSERT INTO t PARTITION (k='v') ...}) need nothing here: the planner puts the
     * static values into the rows, and the writer routes every row by its partition-key values.
     */
    @Override
    public void applyStaticPartition(Map<String, String> partition) {}

    @Override
    public DynamicTableSink copy() {
        return new FlussTableSink(bootstrapServers, path, rowType, settings);
    }

    @Override
    public String asSummaryString() {
        return "Fluss[" + path + "]";
    }
}
