package org.fluss.py.flink.table;

import org.fluss.py.flink.client.ConnectionConfig;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.connector.source.InputFormatProvider;
import org.apache.flink.table.connector.source.abilities.SupportsAggregatePushDown;
import org.apache.flink.table.connector.source.abilities.SupportsFilterPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsLimitPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsProjectionPushDown;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.expressions.AggregateExpression;
import org.apache.flink.table.expressions.CallExpression;
import org.apache.flink.table.expressions.FieldReferenceExpression;
import org.apache.flink.table.expressions.ResolvedExpression;
import org.apache.flink.table.expressions.ValueLiteralExpression;
import org.apache.flink.table.functions.BuiltInFunctionDefinitions;
import org.apache.flink.table.types.logical.LogicalType;
import org.fluss.py.flink.lookup.PointQueryInputFormat;
import org.apache.flink.table.connector.source.lookup.AsyncLookupFunctionProvider;
import org.apache.flink.table.connector.source.lookup.LookupFunctionProvider;
import org.apache.flink.table.connector.source.lookup.PartialCachingAsyncLookupProvider;
import org.apache.flink.table.connector.source.lookup.PartialCachingLookupProvider;
import org.apache.flink.table.connector.source.lookup.cache.LookupCache;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.remote.RemoteLogSettings;
import org.fluss.py.flink.lookup.FlussAsyncLookupFunction;
import org.fluss.py.flink.lookup.FlussLookupFunction;
import org.fluss.py.flink.lookup.Lookuper;
import org.fluss.py.flink.source.FlussSource;
import org.fluss.py.flink.source.PartitionFilter;
import org.fluss.py.flink.source.ReadSpec;
import org.fluss.py.flink.source.RowCountInputFormat;
import org.fluss.py.flink.source.StartupMode;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Scan and lookup of a Fluss table, with top-level projection pushed to the tablet servers.
 * <ul>
 *   <li>A log table is an insert-only stream (batch: the log up to the latest offsets at start).</li>
 *   <li>A primary-key table in streaming mode is a changelog (+I/-U/+U/-D); {@code full} mode reads the KV
 *       snapshot first. In batch mode it is its current rows (ScanKv).</li>
 *   <li>{@code t$changelog} ({@code changelog}) is insert-only with the change metadata columns first;
 *       {@code t$binlog} ({@code binlog}, primary-key tables) too, with the before and after row images.</li>
 *   <li>A lake-enabled table in {@code full} mode is a Union Read (lake snapshot + log after it; primary-key
 *       tables in batch mode merged per key, the log winning); {@code t$lake} ({@code lakeOnly}) is the lake
 *       snapshot alone, bounded and insert-only.</li>
 *   <li>Lookup joins on the primary key or on the bucket key (prefix lookup), sync or async, optionally
 *       through Flink's partial lookup cache.</li>
 *   <li>Pushdowns: projection (to the tablet servers and Paimon), filters on partition keys (partition pruning,
 *       also of partitions discovered later), a batch point query on the whole primary key, LIMIT (batch) and
 *       {@code COUNT(*)} of a log table in batch mode (answered from offsets and lake metadata).</li>
 * </ul>
 */
public class FlussTableSource implements ScanTableSource, LookupTableSource, SupportsProjectionPushDown,
        SupportsFilterPushDown, SupportsLimitPushDown, SupportsAggregatePushDown {
    /** Lookup settings: {@code lookup.async}, {@code lookup.max-retries} and the cache (null = none). */
    static final class LookupSettings implements Serializable {
        private static final long serialVersionUID = 1L;
        final boolean async;
        final int maxRetries;
        final LookupCache cache;

        LookupSettings(boolean async, int maxRetries, LookupCache cache) {
            this.async = async;
            this.maxRetries = maxRetries;
            this.cache = cache;
        }
    }

    private final ConnectionConfig connection;
    private final TablePath path;
    private final RowType rowType; // the table's columns (for $changelog: without the metadata columns)
    private final List<String> partitionKeys;
    private final int[] primaryKey;
    private final boolean changelog;
    private final boolean binlog; // t$binlog (with changelog): before/after images of a primary-key table
    private final boolean lakeOnly;
    private final StartupMode startup;
    private final boolean streaming;
    private final long discoveryIntervalMs;
    private final int fetchMaxBytes;
    private final int fetchWaitMs;
    private final LookupSettings lookup;
    private int[] projection; // over the produced columns (for $changelog: metadata columns first)
    private Object[] pointKey; // batch point query: the primary-key values (Java objects) in primary-key order
    private PartitionFilter partitionFilter; // pushed-down filters on partition keys (null = all partitions)
    private long limit; // pushed-down LIMIT (batch; 0 = none)
    private boolean countOnly; // pushed-down COUNT(*) (batch, log tables)
    private RemoteLogSettings remoteLog = RemoteLogSettings.DEFAULT;

    FlussTableSource(ConnectionConfig connection, TablePath path, RowType rowType, List<String> partitionKeys,
                     int[] primaryKey, boolean changelog, boolean binlog, boolean lakeOnly, StartupMode startup,
                     boolean streaming,
                     long discoveryIntervalMs, int fetchMaxBytes, int fetchWaitMs, LookupSettings lookup,
                     int[] projection) {
        this.connection = connection;
        this.path = path;
        this.rowType = rowType;
        this.partitionKeys = partitionKeys;
        this.primaryKey = primaryKey;
        this.changelog = changelog;
        this.binlog = binlog;
        this.lakeOnly = lakeOnly;
        this.startup = startup;
        this.streaming = streaming;
        this.discoveryIntervalMs = discoveryIntervalMs;
        this.fetchMaxBytes = fetchMaxBytes;
        this.fetchWaitMs = fetchWaitMs;
        this.lookup = lookup;
        this.projection = projection;
    }

    /** How remote (tiered) log segments are read ({@code client.scanner.remote-log.*} options). */
    FlussTableSource withRemoteLog(RemoteLogSettings settings) {
        this.remoteLog = settings;
        return this;
    }

    private boolean hasPrimaryKey() {
        return primaryKey.length > 0;
    }

    @Override
    public ChangelogMode getChangelogMode() {
        if (hasPrimaryKey() && streaming && !changelog && !lakeOnly) {
            return ChangelogMode.all();
        }
        return ChangelogMode.insertOnly();
    }

    private ReadSpec readSpec() {
        if (binlog) { // read every column into the images, project after the metadata columns are added
            return ReadSpec.binlog(rowType, projection);
        }
        if (changelog) { // read every column, project after the metadata columns are added
            return new ReadSpec(rowType, null, hasPrimaryKey(), false, true, projection);
        }
        if (lakeOnly) {
            return new ReadSpec(rowType, projection, false, false, false, null)
                    .withLake(ReadSpec.LakeMode.LAKE_ONLY, false, primaryKey);
        }
        boolean snapshotFirst = hasPrimaryKey() && (!streaming || startup.kind == StartupMode.Kind.FULL);
        ReadSpec spec = new ReadSpec(rowType, projection, hasPrimaryKey() && streaming, snapshotFirst, false, null);
        if (startup.kind == StartupMode.Kind.FULL) { // Union Read when the table turns out to be lake-enabled
            spec = spec.withLake(ReadSpec.LakeMode.UNION, hasPrimaryKey() && !streaming, primaryKey);
        }
        return spec;
    }

    /**
     * Filters on partition keys only become a {@link PartitionFilter} that the enumerator applies to every
     * partition (so partitions created later are pruned too); it evaluates them exactly, so the planner drops
     * them. In batch mode, {@code pk1 = literal AND ...} over every primary-key column turns the scan of a
     * primary-key table into one Lookup; those filters stay with the planner too.
     */
    @Override
    public Result applyFilters(List<ResolvedExpression> filters) {
        List<ResolvedExpression> accepted = new ArrayList<>();
        List<ResolvedExpression> remaining = new ArrayList<>(filters);
        if (!partitionKeys.isEmpty()) {
            Map<String, LogicalType> keyTypes = new HashMap<>();
            for (String k : partitionKeys) {
                keyTypes.put(k, rowType.getTypeAt(rowType.getFieldIndex(k)));
            }
            List<PartitionFilter> parts = new ArrayList<>();
            for (ResolvedExpression f : filters) {
                PartitionFilter p = PartitionFilter.of(f, keyTypes);
                if (p != null) {
                    parts.add(p);
                    accepted.add(f);
                    remaining.remove(f);
                }
            }
            partitionFilter = PartitionFilter.and(parts);
        }
        if (streaming || changelog || lakeOnly || !hasPrimaryKey()) {
            return Result.of(accepted, remaining);
        }
        List<String> names = rowType.getFieldNames();
        Object[] values = new Object[primaryKey.length];
        for (ResolvedExpression f : filters) {
            if (!(f instanceof CallExpression)
                    || ((CallExpression) f).getFunctionDefinition() != BuiltInFunctionDefinitions.EQUALS) {
                continue;
            }
            List<ResolvedExpression> args = ((CallExpression) f).getResolvedChildren();
            FieldReferenceExpression field = null;
            ValueLiteralExpression literal = null;
            for (ResolvedExpression a : args) {
                if (a instanceof FieldReferenceExpression) {
                    field = (FieldReferenceExpression) a;
                } else if (a instanceof ValueLiteralExpression) {
                    literal = (ValueLiteralExpression) a;
                }
            }
            if (field == null || literal == null) {
                continue;
            }
            for (int k = 0; k < primaryKey.length; k++) {
                if (names.get(primaryKey[k]).equals(field.getName())) {
                    Object v = internalValue(literal, rowType.getTypeAt(primaryKey[k]));
                    if (v != null) {
                        values[k] = v;
                        if (!accepted.contains(f)) {
                            accepted.add(f);
                        }
                    }
                }
            }
        }
        if (Arrays.stream(values).allMatch(v -> v != null)) {
            pointKey = values;
        }
        return Result.of(accepted, remaining);
    }

    /** A literal as Flink's internal value of the column's type (null: a type this does not convert). */
    private static Object internalValue(ValueLiteralExpression literal, LogicalType type) {
        switch (type.getTypeRoot()) {
            case TINYINT:
                return literal.getValueAs(Number.class).map(Number::byteValue).orElse(null);
            case SMALLINT:
                return literal.getValueAs(Number.class).map(Number::shortValue).orElse(null);
            case INTEGER:
                return literal.getValueAs(Number.class).map(Number::intValue).orElse(null);
            case BIGINT:
                return literal.getValueAs(Number.class).map(Number::longValue).orElse(null);
            case BOOLEAN:
                return literal.getValueAs(Boolean.class).orElse(null);
            case CHAR:
            case VARCHAR:
                return literal.getValueAs(String.class).orElse(null); // StringData in the reader
            default:
                return null;
        }
    }

    @Override
    public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
        if (pointKey != null) {
            Lookuper lookuper = new Lookuper(connection, path, rowType, primaryKey, projection,
                    lookup.maxRetries);
            return InputFormatProvider.of(new PointQueryInputFormat(lookuper, pointKey));
        }
        if (countOnly) {
            return InputFormatProvider.of(new RowCountInputFormat(connection, path, partitionFilter,
                    startup.kind == StartupMode.Kind.FULL));
        }
        StartupMode mode = changelog && startup.kind == StartupMode.Kind.FULL ? StartupMode.earliest() : startup;
        ReadSpec spec = readSpec().withLimit(limit).withPartitionFilter(partitionFilter);
        return SourceProvider.of(FlussSource.ofRowData(connection, path, spec, mode, !streaming || lakeOnly,
                partitionKeys.isEmpty() ? 0 : discoveryIntervalMs, fetchMaxBytes, fetchWaitMs).withRemoteLog(remoteLog));
    }

    /** Batch only: each reader stops after {@code limit} rows (the planner keeps its LIMIT on top). */
    @Override
    public void applyLimit(long limit) {
        if (!streaming) {
            this.limit = limit;
        }
    }

    /**
     * {@code SELECT COUNT(*) FROM t} in batch mode (no filter but on partition keys, no point query): answered
     * without reading rows, by {@link RowCountInputFormat}: a log table in {@code full}/{@code earliest} mode from
     * its offsets, a primary-key table in {@code full} mode from the key counts its KV stores keep.
     * {@code $changelog}, {@code $lake} and other aggregates are left to Flink.
     */
    @Override
    public boolean applyAggregates(List<int[]> groupingSets, List<AggregateExpression> aggregates,
                                   DataType producedDataType) {
        boolean countable = hasPrimaryKey() ? startup.kind == StartupMode.Kind.FULL
                : startup.kind == StartupMode.Kind.FULL || startup.kind == StartupMode.Kind.EARLIEST;
        if (streaming || changelog || lakeOnly || pointKey != null || limit > 0 || !countable
                || groupingSets.size() != 1 || groupingSets.get(0).length != 0 || aggregates.size() != 1) {
            return false;
        }
        AggregateExpression count = aggregates.get(0);
        String function = count.getFunctionDefinition().getClass().getSimpleName();
        boolean countStar = function.equals("Count1AggFunction")
                || (function.equals("CountAggFunction") && count.getArgs().stream()
                        .noneMatch(a -> a.getOutputDataType().getLogicalType().isNullable()));
        if (!countStar || count.isDistinct() || count.getFilterExpression().isPresent()) {
            return false;
        }
        countOnly = true;
        return true;
    }

    @Override
    public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
        int[][] keys = context.getKeys();
        int[] keyPositions = new int[keys.length];
        for (int i = 0; i < keys.length; i++) {
            // the keys index the produced row: map them back through a pushed-down projection
            keyPositions[i] = projection == null ? keys[i][0] : projection[keys[i][0]];
        }
        Lookuper lookuper = new Lookuper(connection, path, rowType, keyPositions, projection,
                lookup.maxRetries);
        if (lookup.async) {
            FlussAsyncLookupFunction f = new FlussAsyncLookupFunction(lookuper);
            return lookup.cache == null ? AsyncLookupFunctionProvider.of(f)
                    : PartialCachingAsyncLookupProvider.of(f, lookup.cache);
        }
        FlussLookupFunction f = new FlussLookupFunction(lookuper);
        return lookup.cache == null ? LookupFunctionProvider.of(f) : PartialCachingLookupProvider.of(f, lookup.cache);
    }

    @Override
    public boolean supportsNestedProjection() {
        return false;
    }

    @Override
    public void applyProjection(int[][] projectedFields, DataType producedDataType) {
        int width = binlog ? ReadSpec.CHANGELOG_COLUMNS.size() + ReadSpec.BINLOG_IMAGES.size()
                : rowType.getFieldCount() + (changelog ? ReadSpec.CHANGELOG_COLUMNS.size() : 0);
        int[] p = new int[projectedFields.length];
        boolean identity = p.length == width;
        for (int i = 0; i < p.length; i++) {
            p[i] = projectedFields[i][0];
            identity &= p[i] == i;
        }
        // an empty projection (e.g. COUNT(*)) still needs one column to count rows: read the first one
        if (p.length == 0) {
            p = new int[] {0};
            identity = false;
        }
        this.projection = identity ? null : p;
    }

    @Override
    public DynamicTableSource copy() {
        FlussTableSource copy = new FlussTableSource(connection, path, rowType, partitionKeys, primaryKey,
                changelog, binlog, lakeOnly, startup, streaming, discoveryIntervalMs, fetchMaxBytes, fetchWaitMs, lookup,
                projection == null ? null : projection.clone());
        copy.pointKey = pointKey == null ? null : pointKey.clone();
        copy.partitionFilter = partitionFilter;
        copy.limit = limit;
        copy.countOnly = countOnly;
        copy.remoteLog = remoteLog;
        return copy;
    }

    @Override
    public String asSummaryString() {
        return "Fluss[" + path + (binlog ? "$binlog" : changelog ? "$changelog" : "") + (lakeOnly ? "$lake" : "")
                + (pointKey != null ? ", point lookup" : "") + (countOnly ? ", row count from offsets" : "") + "]";
    }
}
