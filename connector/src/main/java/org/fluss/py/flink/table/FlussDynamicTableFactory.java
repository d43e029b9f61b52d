package org.fluss.py.flink.table;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.ObjectIdentifier;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.connector.source.lookup.LookupOptions;
import org.apache.flink.table.connector.source.lookup.cache.DefaultLookupCache;
import org.apache.flink.table.connector.source.lookup.cache.LookupCache;
import org.fluss.py.flink.FlussOptions;
import org.fluss.py.flink.remote.RemoteLogSettings;
import org.fluss.py.flink.catalog.FlinkConversions;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.sink.SinkSettings;
import org.fluss.py.flink.source.StartupMode;

import org.fluss.py.flink.client.ConnectionConfig;

import java.time.ZoneId;
import java.util.Set;

/**
 * {@code 'connector'='fluss'}: the source and sink of a Fluss table, used for tables of a Fluss catalog
 * (through {@code Catalog.getFactory()}) and for tables declared outside one (then {@code bootstrap.servers}
 * is required and {@code database-name} / {@code table-name} default to the Flink database and table name).
 * Options that Fluss keeps as table properties ({@code table.*}, {@code bucket.*}, custom keys) are accepted
 * and not interpreted here.
 */
public class FlussDynamicTableFactory implements DynamicTableSourceFactory, DynamicTableSinkFactory {
    /** The catalog's connection (its security options apply to a table that sets none); null outside one. */
    private final ConnectionConfig catalogConnection;

    public FlussDynamicTableFactory() {
        this(null);
    }

    public FlussDynamicTableFactory(ConnectionConfig catalogConnection) {
        this.catalogConnection = catalogConnection;
    }

    @Override
    public String factoryIdentifier() {
        return FlussOptions.IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(FlussOptions.BOOTSTRAP_SERVERS);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(FlussOptions.DATABASE_NAME, FlussOptions.TABLE_NAME, FlussOptions.SCAN_STARTUP_MODE,
                FlussOptions.SCAN_STARTUP_TIMESTAMP, FlussOptions.SCAN_PARTITION_DISCOVERY_INTERVAL,
                FlussOptions.BUCKET_NUMBER, FlussOptions.BUCKET_KEY, FlussOptions.CLIENT_WRITER_ACKS,
                FlussOptions.CLIENT_WRITER_RETRIES, FlussOptions.CLIENT_WRITER_IDEMPOTENCE,
                FlussOptions.CLIENT_WRITER_BUCKET_NO_KEY_ASSIGNER, FlussOptions.CLIENT_WRITER_DYNAMIC_CREATE_PARTITION,
                FlussOptions.SINK_BATCH_ROWS, FlussOptions.CLIENT_WRITER_COMPRESSION_MIN_BATCH_SIZE,
                FlussOptions.CLIENT_SCANNER_FETCH_MAX_BYTES,
                FlussOptions.CLIENT_SCANNER_FETCH_WAIT_MAX_TIME, FlussOptions.SINK_IGNORE_DELETE, FlussOptions.LOOKUP_ASYNC,
                FlussOptions.CLIENT_SCANNER_REMOTE_LOG_PREFETCH_NUM, FlussOptions.CLIENT_REMOTE_FILE_DOWNLOAD_THREAD_NUM,
                FlussOptions.CLIENT_SCANNER_IO_TMPDIR,
                LookupOptions.CACHE_TYPE, LookupOptions.MAX_RETRIES, LookupOptions.PARTIAL_CACHE_MAX_ROWS,
                LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_ACCESS, LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_WRITE,
                LookupOptions.PARTIAL_CACHE_CACHE_MISSING_KEY, FlussOptions.CLIENT_SECURITY_PROTOCOL,
                FlussOptions.CLIENT_SECURITY_SASL_MECHANISM, FlussOptions.CLIENT_SECURITY_SASL_USERNAME,
                FlussOptions.CLIENT_SECURITY_SASL_PASSWORD, FlussOptions.CLIENT_SECURITY_SASL_JAAS_CONFIG,
                FlussOptions.CLIENT_SECURITY_SSL_ENABLED, FlussOptions.CLIENT_SECURITY_SSL_TRUSTSTORE_PATH,
                FlussOptions.CLIENT_SECURITY_SSL_CERTIFICATE_PATH, FlussOptions.CLIENT_SECURITY_SSL_KEY_PATH);
    }

    /** Whether a table is the {@code t$changelog} virtual table of {@code t}. */
    private static boolean isChangelog(ObjectIdentifier id) {
        return id.getObjectName().endsWith(FlinkConversions.CHANGELOG_SUFFIX);
    }

    /** Whether a table is the {@code t$binlog} virtual table of {@code t}. */
    private static boolean isBinlog(ObjectIdentifier id) {
        return id.getObjectName().endsWith(FlinkConversions.BINLOG_SUFFIX);
    }

    /** Whether a table is the {@code t$lake} virtual table of {@code t} (its lake snapshot alone). */
    private static boolean isLake(ObjectIdentifier id) {
        return id.getObjectName().endsWith(FlinkConversions.LAKE_SUFFIX);
    }

    private static TablePath tablePath(ReadableConfig options, ObjectIdentifier id) {
        String name = id.getObjectName();
        if (isChangelog(id)) {
            name = name.substring(0, name.length() - FlinkConversions.CHANGELOG_SUFFIX.length());
        } else if (isBinlog(id)) {
            name = name.substring(0, name.length() - FlinkConversions.BINLOG_SUFFIX.length());
        } else if (isLake(id)) {
            name = name.substring(0, name.length() - FlinkConversions.LAKE_SUFFIX.length());
        }
        return new TablePath(options.getOptional(FlussOptions.DATABASE_NAME).orElse(id.getDatabaseName()),
                options.getOptional(FlussOptions.TABLE_NAME).orElse(name));
    }

    /** Positions of the primary-key columns in the physical row (empty for a log table); computed columns are
     * not in the physical row, so positions count physical columns only. */
    private static int[] primaryKey(ResolvedCatalogTable table) {
        var schema = table.getResolvedSchema();
        java.util.List<String> physical = schema.getColumns().stream()
                .filter(org.apache.flink.table.catalog.Column::isPhysical)
                .map(org.apache.flink.table.catalog.Column::getName).collect(java.util.stream.Collectors.toList());
        return schema.getPrimaryKey().map(pk -> pk.getColumns().stream().mapToInt(physical::indexOf).toArray())
                .orElse(new int[0]);
    }

    private ConnectionConfig bootstrap(ReadableConfig options, ObjectIdentifier id) {
        String servers = options.getOptional(FlussOptions.BOOTSTRAP_SERVERS).orElseThrow(() -> new ValidationException(
                "Table " + id.asSummaryString() + ": option 'bootstrap.servers' is required"));
        try {
            return ConnectionConfig.from(servers, options, catalogConnection);
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Table " + id.asSummaryString() + ": " + e.getMessage());
        }
    }

    private static RowType physicalRowType(ResolvedCatalogTable table) {
        return (RowType) table.getResolvedSchema().toPhysicalRowDataType().getLogicalType();
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        ReadableConfig options = helper.getOptions();
        ObjectIdentifier id = context.getObjectIdentifier();
        RowType rowType = physicalRowType(context.getCatalogTable());
        boolean binlog = isBinlog(id);
        boolean changelog = isChangelog(id) || binlog;
        int[] primaryKey = primaryKey(context.getCatalogTable());
        if (binlog) { // _change_type, _log_offset, _commit_timestamp, before, after: the table's columns are a ROW
            int meta = org.fluss.py.flink.source.ReadSpec.CHANGELOG_COLUMNS.size();
            rowType = (RowType) rowType.getTypeAt(meta).copy(true);
            primaryKey = new int[0];
        } else if (changelog) { // the metadata columns come first; the source reads the table's own columns
            int meta = org.fluss.py.flink.source.ReadSpec.CHANGELOG_COLUMNS.size();
            rowType = new RowType(rowType.getFields().subList(meta, rowType.getFieldCount()));
            primaryKey = new int[0];
        }
        StartupMode startup;
        try {
            String zone = context.getConfiguration().get(
                    org.apache.flink.table.api.config.TableConfigOptions.LOCAL_TIME_ZONE);
            startup = StartupMode.parse(options.get(FlussOptions.SCAN_STARTUP_MODE),
                    options.getOptional(FlussOptions.SCAN_STARTUP_TIMESTAMP).orElse(null),
                    "default".equals(zone) ? ZoneId.systemDefault() : ZoneId.of(zone));
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Table " + id.asSummaryString() + ": " + e.getMessage());
        }
        boolean streaming = context.getConfiguration().get(ExecutionOptions.RUNTIME_MODE)
                != RuntimeExecutionMode.BATCH;
        LookupCache cache = options.get(LookupOptions.CACHE_TYPE) == LookupOptions.LookupCacheType.PARTIAL
                ? DefaultLookupCache.fromConfig(options) : null;
        if (options.get(LookupOptions.CACHE_TYPE) == LookupOptions.LookupCacheType.FULL) {
            throw new ValidationException("Table " + id.asSummaryString() + ": 'lookup.cache'='FULL' is not "
                    + "supported, use NONE or PARTIAL");
        }
        FlussTableSource.LookupSettings lookup = new FlussTableSource.LookupSettings(
                options.get(FlussOptions.LOOKUP_ASYNC), options.get(LookupOptions.MAX_RETRIES), cache);
        return new FlussTableSource(bootstrap(options, id), tablePath(options, id), rowType,
                context.getCatalogTable().getPartitionKeys(), primaryKey, changelog, binlog, isLake(id), startup,
                streaming,
                options.get(FlussOptions.SCAN_PARTITION_DISCOVERY_INTERVAL).toMillis(),
                (int) Math.min(Integer.MAX_VALUE, options.get(FlussOptions.CLIENT_SCANNER_FETCH_MAX_BYTES).getBytes()),
                (int) options.get(FlussOptions.CLIENT_SCANNER_FETCH_WAIT_MAX_TIME).toMillis(), lookup, null)
                .withRemoteLog(new RemoteLogSettings(options.get(FlussOptions.CLIENT_SCANNER_REMOTE_LOG_PREFETCH_NUM),
                        options.get(FlussOptions.CLIENT_REMOTE_FILE_DOWNLOAD_THREAD_NUM),
                        options.get(FlussOptions.CLIENT_SCANNER_IO_TMPDIR)));
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        ReadableConfig options = helper.getOptions();
        ObjectIdentifier id = context.getObjectIdentifier();
        if (isChangelog(id) || isLake(id)) {
            throw new ValidationException("Table " + id.asSummaryString() + " is a read-only virtual table");
        }
        RowType rowType = physicalRowType(context.getCatalogTable());
        SinkSettings settings;
        try {
            settings = new SinkSettings(options.get(FlussOptions.CLIENT_WRITER_ACKS),
                    options.get(FlussOptions.CLIENT_WRITER_RETRIES), options.get(FlussOptions.CLIENT_WRITER_IDEMPOTENCE),
                    options.get(FlussOptions.CLIENT_WRITER_BUCKET_NO_KEY_ASSIGNER),
                    options.get(FlussOptions.CLIENT_WRITER_DYNAMIC_CREATE_PARTITION),
                    options.get(FlussOptions.SINK_BATCH_ROWS), options.get(FlussOptions.SINK_IGNORE_DELETE),
                    options.get(FlussOptions.CLIENT_WRITER_COMPRESSION_MIN_BATCH_SIZE).getBytes());
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Table " + id.asSummaryString() + ": " + e.getMessage());
        }
        return new FlussTableSink(bootstrap(options, id), tablePath(options, id), rowType,
                primaryKey(context.getCatalogTable()), settings);
    }
}
