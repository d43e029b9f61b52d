package org.fluss.py.flink.source;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.client.TablePath;

/**
 * FLIP-27 source of a Fluss log table: one split per bucket (per partition), offsets in checkpoints,
 * bounded (up to the latest offsets at start) in batch mode, continuous in streaming mode.
 */
public class FlussSource implements Source<RowData, FlussSplit, FlussEnumState>, ResultTypeQueryable<RowData> {
    private static final long serialVersionUID = 1L;

    private final String bootstrapServers;
    private final TablePath path;
    private final RowType readType;
    private final int[] projection;
    private final StartupMode startup;
    private final boolean bounded;
    private final long discoveryIntervalMs;
    private final int fetchMaxBytes;
    private final int fetchWaitMs;

    public FlussSource(String bootstrapServers, TablePath path, RowType readType, int[] projection,
                       StartupMode startup, boolean bounded, long discoveryIntervalMs, int fetchMaxBytes,
                       int fetchWaitMs) {
        this.bootstrapServers = bootstrapServers;
        this.path = path;
        this.readType = readType;
        this.projection = projection;
        this.startup = startup;
        this.bounded = bounded;
        this.discoveryIntervalMs = discoveryIntervalMs;
        this.fetchMaxBytes = fetchMaxBytes;
        this.fetchWaitMs = fetchWaitMs;
    }

    @Override
    public Boundedness getBoundedness() {
        return bounded ? Boundedness.BOUNDED : Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SourceReader<RowData, FlussSplit> createReader(SourceReaderContext context) {
        return new FlussSourceReader(() -> new FlussSplitReader(bootstrapServers, path, readType, projection,
                fetchMaxBytes, fetchWaitMs), new Configuration(), context);
    }

    @Override
    public SplitEnumerator<FlussSplit, FlussEnumState> createEnumerator(SplitEnumeratorContext<FlussSplit> ctx) {
        return new FlussSourceEnumerator(ctx, bootstrapServers, path, startup, bounded, discoveryIntervalMs, null);
    }

    @Override
    public SplitEnumerator<FlussSplit, FlussEnumState> restoreEnumerator(SplitEnumeratorContext<FlussSplit> ctx,
                                                                        FlussEnumState state) {
        return new FlussSourceEnumerator(ctx, bootstrapServers, path, startup, bounded, discoveryIntervalMs, state);
    }

    @Override
    public SimpleVersionedSerializer<FlussSplit> getSplitSerializer() {
        return FlussSplitSerializer.INSTANCE;
    }

    @Override
    public SimpleVersionedSerializer<FlussEnumState> getEnumeratorCheckpointSerializer() {
        return new FlussEnumState.Serializer();
    }

    @Override
    public TypeInformation<RowData> getProducedType() {
        return InternalTypeInfo.of(readType);
    }
}
