package org.fluss.py.flink.datastream;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.util.DataFormatConverters;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.utils.TypeConversions;
import org.apache.flink.types.Row;
import org.fluss.py.flink.catalog.FlinkConversions;
import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.source.FlussRecordEmitter;
import org.fluss.py.flink.source.FlussSource;
import org.fluss.py.flink.source.ReadSpec;
import org.fluss.py.flink.source.StartupMode;
import org.fluss.py.rpc.TableInfoPb;

import java.time.ZoneId;
import java.util.List;

/**
 * Builds a DataStream source of {@link Row}s of a Fluss table (what PyFlink's {@code FlussSource.builder()}
 * wraps). The table's schema is read from the cluster at {@link #build()}; a primary-key table gives a
 * changelog (RowKind per row; {@code full} mode starts with the KV snapshot), a log table inserts. A
 * lake-enabled table in {@code full} mode is a Union Read (lake snapshot, then the log after it), as in SQL.
 */
public final class FlussSourceBuilder {
    private String bootstrapServers;
    private final java.util.Map<String, String> clientOptions = new java.util.HashMap<>();
    private String database = "fluss";
    private String table;
    private String startingOffsets = "full";
    private String startupTimestamp;
    private String[] projectedFields;
    private boolean bounded;

    /** A client option, e.g. {@code client.security.protocol} = SASL and the SASL username and password. */
    public FlussSourceBuilder setOption(String key, String value) {
        clientOptions.put(key, value);
        return this;
    }

    private org.fluss.py.flink.client.ConnectionConfig connection() {
        return org.fluss.py.flink.client.ConnectionConfig.from(bootstrapServers,
                org.apache.flink.configuration.Configuration.fromMap(clientOptions), null);
    }

    public FlussSourceBuilder setBootstrapServers(String servers) {
        this.bootstrapServers = servers;
        return this;
    }

    public FlussSourceBuilder setDatabase(String database) {
        this.database = database;
        return this;
    }

    public FlussSourceBuilder setTable(String table) {
        this.table = table;
        return this;
    }

    /** {@code full} [default] | {@code earliest} | {@code latest} | {@code timestamp} (with a timestamp). */
    public FlussSourceBuilder setStartingOffsets(String mode) {
        this.startingOffsets = mode;
        return this;
    }

    public FlussSourceBuilder setStartingTimestamp(long epochMillis) {
        this.startingOffsets = "timestamp";
        this.startupTimestamp = String.valueOf(epochMillis);
        return this;
    }

    public FlussSourceBuilder setProjectedFields(String... fields) {
        this.projectedFields = fields;
        return this;
    }

    /** Stop at the latest offsets at start (a primary-key table: its current rows) instead of running on. */
    public FlussSourceBuilder setBounded(boolean bounded) {
        this.bounded = bounded;
        return this;
    }

    public FlussSource<Row> build() {
        if (table == null) {
            throw new IllegalArgumentException("FlussSource: the table is not set (setTable)");
        }
        TablePath path = new TablePath(database, table);
        StartupMode startup = StartupMode.parse(startingOffsets, startupTimestamp, ZoneId.systemDefault());
        RowType tableType;
        int[] keyIndexes;
        try (FlussClient client = new FlussClient(connection())) {
            TableInfoPb info = client.tableInfo(path);
            tableType = FlinkConversions.rowType(info);
            keyIndexes = info.getDescriptorPb().getSchema().getPrimaryKeysList().stream()
                    .mapToInt(tableType.getFieldNames()::indexOf).toArray();
        }
        boolean primaryKey = keyIndexes.length > 0;
        int[] projection = null;
        if (projectedFields != null) {
            projection = new int[projectedFields.length];
            List<String> names = tableType.getFieldNames();
            for (int i = 0; i < projection.length; i++) {
                projection[i] = names.indexOf(projectedFields[i]);
                if (projection[i] < 0) {
                    throw new IllegalArgumentException("FlussSource: table " + path + " has no column '"
                            + projectedFields[i] + "' (columns: " + names + ")");
                }
            }
        }
        boolean snapshotFirst = primaryKey && (bounded || startup.kind == StartupMode.Kind.FULL);
        ReadSpec spec = new ReadSpec(tableType, projection, primaryKey && !bounded, snapshotFirst, false, null);
        if (startup.kind == StartupMode.Kind.FULL) { // Union Read when the table turns out to be lake-enabled
            spec = spec.withLake(ReadSpec.LakeMode.UNION, primaryKey && bounded, keyIndexes);
        }
        DataType dataType = TypeConversions.fromLogicalToDataType(spec.producedType());
        @SuppressWarnings("unchecked")
        DataFormatConverters.DataFormatConverter<RowData, Row> converter =
                (DataFormatConverters.DataFormatConverter<RowData, Row>) (Object)
                        DataFormatConverters.getConverterForDataType(dataType);
        @SuppressWarnings("unchecked")
        TypeInformation<Row> typeInfo = (TypeInformation<Row>) TypeConversions.fromDataTypeToLegacyInfo(dataType);
        FlussRecordEmitter.Converter<Row> toRow = converter::toExternal;
        return new FlussSource<>(connection(), path, spec, startup, bounded, 60_000L, 16 * 1024 * 1024, 500,
                toRow, typeInfo);
    }
}
