package org.fluss.py.flink.sink;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.client.TablePath;

/** Sink V2 of a Fluss log table: at-least-once (idempotent per writer), flushed on checkpoints and at the end. */
public class FlussSink implements Sink<RowData> {
    private static final long serialVersionUID = 1L;

    private final String bootstrapServers;
    private final TablePath path;
    private final RowType rowType;
    private final SinkSettings settings;

    public FlussSink(String bootstrapServers, TablePath path, RowType rowType, SinkSettings settings) {
        this.bootstrapServers = bootstrapServers;
        this.path = path;
        this.rowType = rowType;
        this.settings = settings;
    }

    @Override
    public SinkWriter<RowData> createWriter(WriterInitContext context) {
        return new FlussSinkWriter(bootstrapServers, path, rowType, settings,
                context.getTaskInfo().getIndexOfThisSubtask());
    }
}
