package org.fluss.py.flink.sink;

import org.fluss.py.flink.client.ConnectionConfig;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.client.TablePath;

/** Sink V2 of a Fluss table (append to a log table, upsert/delete into a primary-key table): at-least-once (idempotent per writer), flushed on checkpoints and at the end. */
public class FlussSink implements Sink<RowData> {
    private static final long serialVersionUID = 1L;

    private final ConnectionConfig connection;
    private final TablePath path;
    private final RowType rowType;
    private final SinkSettings settings;
    private final int[] targetColumns; // partial update of a primary-key table; null = every column

    public FlussSink(ConnectionConfig connection, TablePath path, RowType rowType, SinkSettings settings) {
        this(connection, path, rowType, settings, null);
    }

    public FlussSink(ConnectionConfig connection, TablePath path, RowType rowType, SinkSettings settings,
                     int[] targetColumns) {
        this.targetColumns = targetColumns;
        this.connection = connection;
        this.path = path;
        this.rowType = rowType;
        this.settings = settings;
    }

    @Override
    public SinkWriter<RowData> createWriter(WriterInitContext context) {
        return new FlussSinkWriter(connection, path, rowType, settings,
                context.getTaskInfo().getIndexOfThisSubtask(), targetColumns);
    }
}
