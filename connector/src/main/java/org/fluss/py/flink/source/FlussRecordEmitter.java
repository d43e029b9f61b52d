package org.fluss.py.flink.source;

import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.table.data.RowData;

import java.io.Serializable;
import java.util.function.Function;

/**
 * Emits a row (converted to the source's output type: {@link RowData} for SQL, {@code Row} for the DataStream
 * builders) and moves its split's position past it (offset and lake rows: what a checkpoint stores).
 */
public final class FlussRecordEmitter<T> implements RecordEmitter<FlussRecord, T, FlussSplitState> {
    /** RowData → the output type; serializable so a source can carry it to the task managers. */
    public interface Converter<T> extends Function<RowData, T>, Serializable {}

    private final Converter<T> converter;

    public FlussRecordEmitter(Converter<T> converter) {
        this.converter = converter;
    }

    @Override
    public void emitRecord(FlussRecord record, SourceOutput<T> output, FlussSplitState state) {
        output.collect(converter.apply(record.row), record.timestamp);
        state.nextOffset = record.nextOffset;
        state.lakeRowsEmitted = record.nextLakeRows;
    }
}
