package org.fluss.py.flink.table;

import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.connector.source.InputFormatProvider;
import org.apache.flink.table.connector.source.abilities.SupportsFilterPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsProjectionPushDown;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
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
import org.fluss.py.flink.lookup.FlussAsyncLookupFunction;
import org.fluss.py.flink.lookup.FlussLookupFunction;
import org.fluss.py.flink.lookup.Lookuper;
import org.fluss.py.flink.source.FlussSource;
import org.fluss.py.flink.source.ReadSpec;
import org.fluss.py.flink.source.StartupMode;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * Scan and lookup of a Fluss table, with top-level projection pushed to the tablet servers.
 * <ul>
 *   <li>A log table is an insert-only stream (batch: the log up to the latest offsets at start).</li>
 *   <li>A primary-key table in streaming mode is a changelog (+I/-U/+U/-D); {@code full} mode reads the KV
 *       snapshot first. In batch mode it is its current rows (ScanKv).</li>
 *   <li>{@code t$changelog} ({@code changelog}) is insert-only with the change metadata columns first.</li>
 *   <li>Lookup joins on the primary key or on the bucket key (prefix lookup), sync or async, optionally
 *       through Flink's partial lookup cache.</li>
 * </ul>
 */
public class FlussTableSource implements ScanTableSource, LookupTableSource, SupportsProjectionPushDown,
        SupportsFilterPushDown {
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

    private final String bootstrapServers;
    private final TablePath path;
    private final RowType rowType; // the table's columns (for $changelog: without the metadata columns)
    private final List<String> partitionKeys;
    private final int[] primaryKey;
    private final boolean changelog;
    private final StartupMode startup;
    private final boolean streaming;
    private final long discoveryIntervalMs;
    private final int fetchMaxBytes;
    private final int fetchWaitMs;
    private final LookupSettings lookup;
    private int[] projection; // over the produced columns (for $changelog: metadata columns first)
    private Object[] pointKey; // batch point query: the primary-key values (Java objects) in primary-key order

    FlussTableSource(String bootstrapServers, TablePath path, RowType rowType, List<String> partitionKeys,
                     int[] primaryKey, boolean changelog, StartupMode startup, boolean streaming,
                     long discoveryIntervalMs, int fetchMaxBytes, int fetchWaitMs, LookupSettings lookup,
                     int[] projection) {
        this(bootstrapServers, path, rowType, partitionKeys, primaryKey, changelog, startup, streaming,
                discoveryIntervalMs, fetchMaxBytes, fetchWaitMs, lookup, projection, null);
    }

    private FlussTableSource(String bootstrapServers, TablePath path, RowType rowType, List<String> partitionKeys,
                             int[] primaryKey, boolean changelog, StartupMode startup, boolean streaming,
                             long discoveryIntervalMs, int fetchMaxBytes, int fetchWaitMs, LookupSettings lookup,
                             int[] projection, Object[] pointKey) {
        this.pointKey = pointKey;
        this.bootstrapServers = bootstrapServers;
        this.path = path;
        this.rowType = rowType;
        this.partitionKeys = partitionKeys;
        this.primaryKey = primaryKey;
        this.changelog = changelog;
        this.startup = startup;
        this.streaming = streaming;
        this.discoveryIntervalMs = discoveryIntervalMs;
        this.fetchMaxBytes = fetchMaxBytes;
        this.fetchWaitMs = fetchWaitMs;
        this.lookup = lookup;
        this.projection = projection;
    }

    private boolean hasPrimaryKey() {
        return primaryKey.length > 0;
    }

    @Override
    public ChangelogMode getChangelogMode() {
        if (hasPrimaryKey() && streaming && !changelog) {
            return ChangelogMode.all();
        }
        return ChangelogMode.insertOnly();
    }

    private ReadSpec readSpec() {
        boolean snapshotFirst = hasPrimaryKey() && !changelog
                && (!streaming || startup.kind == StartupMode.Kind.FULL);
        if (changelog) { // read every column, project after the metadata columns are added
            return new ReadSpec(rowType, null, hasPrimaryKey(), false, true, projection);
        }
        return new ReadSpec(rowType, projection, hasPrimaryKey() && streaming, snapshotFirst, false, null);
    }

    /**
     * In batch mode, {@code pk1 = literal AND pk2 = literal ...} over every primary-key column turns the scan of
     * a primary-key table into one Lookup. Every filter stays with the planner too (they are only a hint here).
     */
    @Override
    public Result applyFilters(List<ResolvedExpression> filters) {
        if (streaming || changelog || !hasPrimaryKey()) {
            return Result.of(Collections.emptyList(), filters);
        }
        List<String> names = rowType.getFieldNames();
        Object[] values = new Object[primaryKey.length];
        List<ResolvedExpression> accepted = new ArrayList<>();
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
                        accepted.add(f);
                    }
                }
            }
        }
        if (Arrays.stream(values).allMatch(v -> v != null)) {
            pointKey = values;
        }
        return Result.of(accepted, filters);
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
            Lookuper lookuper = new Lookuper(bootstrapServers, path, rowType, primaryKey, projection,
                    lookup.maxRetries);
            return InputFormatProvider.of(new PointQueryInputFormat(lookuper, pointKey));
        }
        StartupMode mode = changelog && startup.kind == StartupMode.Kind.FULL ? StartupMode.earliest() : startup;
        return SourceProvider.of(FlussSource.ofRowData(bootstrapServers, path, readSpec(), mode, !streaming,
                partitionKeys.isEmpty() ? 0 : discoveryIntervalMs, fetchMaxBytes, fetchWaitMs));
    }

    @Override
    public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
        int[][] keys = context.getKeys();
        int[] keyPositions = new int[keys.length];
        for (int i = 0; i < keys.length; i++) {
            // the keys index the produced row: map them back through a pushed-down projection
            keyPositions[i] = projection == null ? keys[i][0] : projection[keys[i][0]];
        }
        Lookuper lookuper = new Lookuper(bootstrapServers, path, rowType, keyPositions, projection,
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
        int width = rowType.getFieldCount() + (changelog ? ReadSpec.CHANGELOG_COLUMNS.size() : 0);
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
        return new FlussTableSource(bootstrapServers, path, rowType, partitionKeys, primaryKey, changelog, startup,
                streaming, discoveryIntervalMs, fetchMaxBytes, fetchWaitMs, lookup,
                projection == null ? null : projection.clone(), pointKey == null ? null : pointKey.clone());
    }

    @Override
    public String asSummaryString() {
        return "Fluss[" + path + (changelog ? "$changelog" : "") + (pointKey != null ? ", point lookup" : "") + "]";
    }
}
