package org.fluss.py.flink.source;

import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.table.data.RowData;

/** Emits a row and moves its split's offset past it (that offset is what a checkpoint stores). */
public final class FlussRecordEmitter implements RecordEmitter<FlussRecord, RowData, FlussSplitState> {
    @Override
    public void emitRecord(FlussRecord record, SourceOutput<RowData> output, FlussSplitState state) {
        output.collect(record.row, record.timestamp);
        state.nextOffset = record.offset + 1;
    }
}
