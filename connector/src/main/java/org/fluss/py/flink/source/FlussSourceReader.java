package org.fluss.py.flink.source;

import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.SingleThreadMultiplexSourceReaderBase;

import java.util.Map;

/** One fetcher thread per reader, which fetches all of the reader's buckets ({@link FlussSplitReader}). */
public final class FlussSourceReader<T>
        extends SingleThreadMultiplexSourceReaderBase<FlussRecord, T, FlussSplit, FlussSplitState> {

    public FlussSourceReader(java.util.function.Supplier<FlussSplitReader> splitReader,
                             FlussRecordEmitter.Converter<T> converter, Configuration config,
                             SourceReaderContext context) {
        super(splitReader::get, new FlussRecordEmitter<>(converter), config, context);
    }

    @Override
    public void start() {
        // splits are pushed by the enumerator
    }

    @Override
    protected void onSplitFinished(Map<String, FlussSplitState> finishedSplitIds) {}

    @Override
    protected FlussSplitState initializedState(FlussSplit split) {
        return new FlussSplitState(split);
    }

    @Override
    protected FlussSplit toSplitType(String splitId, FlussSplitState state) {
        return state.toSplit();
    }
}
