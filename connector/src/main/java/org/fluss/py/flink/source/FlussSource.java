package org.fluss.py.flink.source;

import org.fluss.py.flink.client.ConnectionConfig;
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
import org.fluss.py.flink.remote.RemoteLogSettings;

/**
 * FLIP-27 source of a Fluss table: one split per bucket (per partition), offsets in checkpoints, bounded in
 * batch mode (a log table up to the latest offsets at start; a primary-key table: its current rows), continuous
 * in streaming mode (a primary-key table in full mode: the KV snapshot, then the changelog). A lake-enabled table
 * in full mode is read as its lake snapshot and then the log after it (Union Read). See {@link ReadSpec}.
 */
public class FlussSource<T> implements Source<T, FlussSplit, FlussEnumState>, ResultTypeQueryable<T> {
    private static final long serialVersionUID = 1L;

    private final ConnectionConfig connection;
    private final TablePath path;
    private final ReadSpec spec;
    private final StartupMode startup;
    private final boolean bounded;
    private final long discoveryIntervalMs;
    private final int fetchMaxBytes;
    private final int fetchWaitMs;
    private final FlussRecordEmitter.Converter<T> converter;
    private final TypeInformation<T> producedType;
    private RemoteLogSettings remoteLog = RemoteLogSettings.DEFAULT;

    /** A source of Flink's internal rows (what the SQL connector uses). */
    public static FlussSource<RowData> ofRowData(ConnectionConfig connection, TablePath path, ReadSpec spec,
                                                 StartupMode startup, boolean bounded, long discoveryIntervalMs,
                                                 int fetchMaxBytes, int fetchWaitMs) {
        return new FlussSource<>(connection, path, spec, startup, bounded, discoveryIntervalMs, fetchMaxBytes,
                fetchWaitMs, row -> row, InternalTypeInfo.of(spec.producedType()));
    }

    public FlussSource(ConnectionConfig connection, TablePath path, ReadSpec spec,
                       StartupMode startup, boolean bounded, long discoveryIntervalMs, int fetchMaxBytes,
                       int fetchWaitMs, FlussRecordEmitter.Converter<T> converter, TypeInformation<T> producedType) {
        this.converter = converter;
        this.producedType = producedType;
        this.connection = connection;
        this.path = path;
        this.spec = spec;
        this.startup = startup;
        this.bounded = bounded;
        this.discoveryIntervalMs = discoveryIntervalMs;
        this.fetchMaxBytes = fetchMaxBytes;
        this.fetchWaitMs = fetchWaitMs;
    }

    /** How remote (tiered) log segments are read ({@code client.scanner.remote-log.*}). */
    public FlussSource<T> withRemoteLog(RemoteLogSettings settings) {
        this.remoteLog = settings;
        return this;
    }

    @Override
    public Boundedness getBoundedness() {
        return bounded ? Boundedness.BOUNDED : Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SourceReader<T, FlussSplit> createReader(SourceReaderContext context) {
        RemoteLogSettings remote = remoteLog;
        return new FlussSourceReader<>(() -> new FlussSplitReader(connection, path, spec,
                fetchMaxBytes, fetchWaitMs, remote), converter, new Configuration(), context);
    }

    @Override
    public SplitEnumerator<FlussSplit, FlussEnumState> createEnumerator(SplitEnumeratorContext<FlussSplit> ctx) {
        return new FlussSourceEnumerator(ctx, connection, path, startup, bounded, discoveryIntervalMs, spec, null);
    }

    @Override
    public SplitEnumerator<FlussSplit, FlussEnumState> restoreEnumerator(SplitEnumeratorContext<FlussSplit> ctx,
                                                                        FlussEnumState state) {
        return new FlussSourceEnumerator(ctx, connection, path, startup, bounded, discoveryIntervalMs, spec, state);
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
    public TypeInformation<T> getProducedType() {
        return producedType;
    }
}
