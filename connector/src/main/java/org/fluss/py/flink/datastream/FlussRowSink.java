package org.fluss.py.flink.datastream;

import org.fluss.py.flink.client.ConnectionConfig;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.util.DataFormatConverters;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.utils.TypeConversions;
import org.apache.flink.types.Row;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.sink.FlussSinkWriter;
import org.fluss.py.flink.sink.SinkSettings;

import java.io.IOException;

/**
 * A Sink V2 of {@link Row}s into a Fluss table (built by {@link FlussSinkBuilder}): each Row is converted to
 * Flink's internal row and written by {@link FlussSinkWriter} (append for a log table; upsert, or delete for a
 * DELETE row, for a primary-key table).
 */
public final class FlussRowSink implements Sink<Row> {
    private static final long serialVersionUID = 1L;

    private final ConnectionConfig connection;
    private final TablePath path;
    private final RowType rowType;
    private final SinkSettings settings;

    FlussRowSink(ConnectionConfig connection, TablePath path, RowType rowType, SinkSettings settings) {
        this.connection = connection;
        this.path = path;
        this.rowType = rowType;
        this.settings = settings;
    }

    @Override
    public SinkWriter<Row> createWriter(WriterInitContext context) {
        @SuppressWarnings("unchecked")
        DataFormatConverters.DataFormatConverter<RowData, Row> converter =
                (DataFormatConverters.DataFormatConverter<RowData, Row>) (Object)
                        DataFormatConverters.getConverterForDataType(TypeConversions.fromLogicalToDataType(rowType));
        FlussSinkWriter writer = new FlussSinkWriter(connection, path, rowType, settings,
                context.getTaskInfo().getIndexOfThisSubtask());
        return new SinkWriter<Row>() {
            @Override
            public void write(Row row, Context ctx) throws IOException {
                RowData data = converter.toInternal(row);
                data.setRowKind(row.getKind());
                writer.write(data, ctx);
            }

            @Override
            public void flush(boolean endOfInput) throws IOException {
                writer.flush(endOfInput);
            }

            @Override
            public void close() throws Exception {
                writer.close();
            }
        };
    }
}
