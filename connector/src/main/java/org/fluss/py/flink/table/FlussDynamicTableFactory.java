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
import org.fluss.py.flink.FlussOptions;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.sink.SinkSettings;
import org.fluss.py.flink.source.StartupMode;

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
                FlussOptions.SINK_BATCH_ROWS, FlussOptions.CLIENT_SCANNER_FETCH_MAX_BYTES,
                FlussOptions.CLIENT_SCANNER_FETCH_WAIT_MS);
    }

    private static TablePath tablePath(ReadableConfig options, ObjectIdentifier id) {
        return new TablePath(options.getOptional(FlussOptions.DATABASE_NAME).orElse(id.getDatabaseName()),
                options.getOptional(FlussOptions.TABLE_NAME).orElse(id.getObjectName()));
    }

    private static String bootstrap(ReadableConfig options, ObjectIdentifier id) {
        return options.getOptional(FlussOptions.BOOTSTRAP_SERVERS).orElseThrow(() -> new ValidationException(
                "Table " + id.asSummaryString() + ": option 'bootstrap.servers' is required"));
    }

    private static RowType physicalRowType(ResolvedCatalogTable table, ObjectIdentifier id) {
        if (table.getResolvedSchema().getPrimaryKey().isPresent()) {
            throw new ValidationException("Table " + id.asSummaryString() + " has a primary key: primary-key tables "
                    + "are not supported by this version of the Flink connector yet (log tables only)");
        }
        return (RowType) table.getResolvedSchema().toPhysicalRowDataType().getLogicalType();
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        ReadableConfig options = helper.getOptions();
        ObjectIdentifier id = context.getObjectIdentifier();
        RowType rowType = physicalRowType(context.getCatalogTable(), id);
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
        return new FlussTableSource(bootstrap(options, id), tablePath(options, id), rowType,
                context.getCatalogTable().getPartitionKeys(), startup, streaming,
                options.get(FlussOptions.SCAN_PARTITION_DISCOVERY_INTERVAL).toMillis(),
                options.get(FlussOptions.CLIENT_SCANNER_FETCH_MAX_BYTES),
                options.get(FlussOptions.CLIENT_SCANNER_FETCH_WAIT_MS), null);
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        ReadableConfig options = helper.getOptions();
        ObjectIdentifier id = context.getObjectIdentifier();
        RowType rowType = physicalRowType(context.getCatalogTable(), id);
        SinkSettings settings;
        try {
            settings = new SinkSettings(options.get(FlussOptions.CLIENT_WRITER_ACKS),
                    options.get(FlussOptions.CLIENT_WRITER_RETRIES), options.get(FlussOptions.CLIENT_WRITER_IDEMPOTENCE),
                    options.get(FlussOptions.CLIENT_WRITER_BUCKET_NO_KEY_ASSIGNER),
                    options.get(FlussOptions.CLIENT_WRITER_DYNAMIC_CREATE_PARTITION),
                    options.get(FlussOptions.SINK_BATCH_ROWS));
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Table " + id.asSummaryString() + ": " + e.getMessage());
        }
        return new FlussTableSink(bootstrap(options, id), tablePath(options, id), rowType,
                settings);
    }
}
