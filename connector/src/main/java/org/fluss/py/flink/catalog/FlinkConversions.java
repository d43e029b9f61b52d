package org.fluss.py.flink.catalog;

import org.apache.flink.table.api.Schema;
import org.apache.flink.table.catalog.CatalogTable;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.catalog.exceptions.CatalogException;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.utils.TypeConversions;
import org.fluss.py.flink.FlussOptions;
import org.fluss.py.flink.OptionsRegistry;
import org.fluss.py.flink.types.FlussTypes;
import org.fluss.py.rpc.ColumnPb;
import org.fluss.py.rpc.SchemaPb;
import org.fluss.py.rpc.TableDescriptorPb;
import org.fluss.py.rpc.TableInfoPb;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Flink catalog tables to Fluss table descriptors and back. WITH options: {@code bucket.num} and
 * {@code bucket.key} become the descriptor's bucket count / keys, table options ({@code table.*} and the other
 * keys the registry declares as table options, such as the aggregation engine's {@code fields.<column>.agg};
 * see {@link OptionsRegistry}) become table properties, checked and read by the servers; every other key except
 * {@code connector} and {@code bootstrap.servers} is kept as a custom property (client options such as
 * {@code scan.startup.mode} stay with the table). Fluss stores physical columns only: computed columns (such as
 * {@code ptime AS PROCTIME()}) and watermarks are kept in the custom properties, as Fluss's own catalog does
 * ({@link FlinkSchemaProperties}), so the table reads back identically in a new session.
 */
public final class FlinkConversions {
    private FlinkConversions() {}

    public static TableDescriptorPb toFluss(String tableName, ResolvedCatalogTable table) {
        ResolvedSchema schema = table.getResolvedSchema();
        for (Column c : schema.getColumns()) {
            if (c instanceof Column.MetadataColumn) {
                throw new CatalogException("Table " + tableName + ": column '" + c.getName() + "' is a metadata "
                        + "column, which Fluss tables do not support");
            }
        }
        SchemaPb.Builder s = SchemaPb.newBuilder();
        for (Column c : schema.getColumns()) {
            if (!c.isPhysical()) {
                continue; // a computed column: kept in the custom properties (FlinkSchemaProperties)
            }
            String type;
            try {
                type = FlussTypes.toFluss(c.getDataType().getLogicalType());
            } catch (IllegalArgumentException e) {
                throw new CatalogException("Table " + tableName + ", column '" + c.getName() + "': "
                        + e.getMessage());
            }
            ColumnPb.Builder col = ColumnPb.newBuilder().setName(c.getName()).setDataType(type);
            c.getComment().ifPresent(x -> col.setComment(x).setHasComment(true));
            s.addColumns(col);
        }
        schema.getPrimaryKey().ifPresent(pk -> s.addAllPrimaryKeys(pk.getColumns()));
        TableDescriptorPb.Builder d = TableDescriptorPb.newBuilder().setSchema(s)
                .addAllPartitionKeys(table.getPartitionKeys());
        if (table.getComment() != null && !table.getComment().isEmpty()) {
            d.setComment(table.getComment()).setHasComment(true);
        }
        d.putAllCustomProperties(FlinkSchemaProperties.serialize(tableName, schema));
        for (Map.Entry<String, String> e : table.getOptions().entrySet()) {
            String k = e.getKey();
            String v = e.getValue();
            if (k.equals("connector") || k.equals(FlussOptions.BOOTSTRAP_SERVERS.key())) {
                continue;
            }
            if (FlinkSchemaProperties.isSchemaKey(k)) {
                throw new CatalogException("Table " + tableName + ": option '" + k + "' is reserved for the "
                        + "computed columns and watermarks the catalog stores");
            }
            if (k.equals(FlussOptions.BUCKET_NUMBER.key())) {
                try {
                    d.setBucketCount(Integer.parseInt(v.trim()));
                } catch (NumberFormatException ex) {
                    throw new CatalogException("Table " + tableName + ": option 'bucket.num' must be an integer, got '"
                            + v + "'");
                }
            } else if (k.equals(FlussOptions.BUCKET_KEY.key())) {
                for (String key : v.split(",")) {
                    d.addBucketKeys(key.trim());
                }
            } else if (OptionsRegistry.isTableProperty(k)) {
                d.putProperties(k, v);
            } else {
                d.putCustomProperties(k, v);
            }
        }
        return d.build();
    }

    public static RowType rowType(TableInfoPb info) {
        List<RowType.RowField> fields = new ArrayList<>();
        for (ColumnPb c : info.getDescriptorPb().getSchema().getColumnsList()) {
            fields.add(new RowType.RowField(c.getName(), FlussTypes.toFlink(c.getDataType())));
        }
        return new RowType(fields);
    }

    public static CatalogTable toFlink(TableInfoPb info, String bootstrapServers) {
        return toFlink(info, bootstrapServers, true);
    }

    /**
     * The Flink table of a Fluss table: its physical columns, then (with {@code withDerived}) its computed columns
     * at their positions and its watermarks, restored from the custom properties the catalog stored.
     */
    public static CatalogTable toFlink(TableInfoPb info, String bootstrapServers, boolean withDerived) {
        TableDescriptorPb d = info.getDescriptorPb();
        Schema.Builder b = Schema.newBuilder();
        Map<String, String> custom = d.getCustomPropertiesMap();
        Map<Integer, FlinkSchemaProperties.ComputedColumn> computed = withDerived
                ? FlinkSchemaProperties.computedColumns(custom) : Map.of();
        List<ColumnPb> physical = d.getSchema().getColumnsList();
        int next = 0;
        for (int position = 0; next < physical.size() || computed.containsKey(position); position++) {
            FlinkSchemaProperties.ComputedColumn cc = computed.get(position);
            if (cc != null) {
                b.columnByExpression(cc.name, cc.expression);
                if (cc.comment != null) {
                    b.withComment(cc.comment);
                }
                continue;
            }
            ColumnPb c = physical.get(next++);
            LogicalType t = FlussTypes.toFlink(c.getDataType());
            b.column(c.getName(), TypeConversions.fromLogicalToDataType(t));
            if (c.getHasComment()) {
                b.withComment(c.getComment());
            }
        }
        if (withDerived) {
            for (Map.Entry<String, String> w : FlinkSchemaProperties.watermarks(custom).entrySet()) {
                b.watermark(w.getKey(), w.getValue());
            }
        }
        List<String> pk = d.getSchema().getPrimaryKeysList();
        if (!pk.isEmpty()) {
            b.primaryKeyNamed("PK_" + String.join("_", pk), pk);
        }
        Map<String, String> options = new HashMap<>(custom);
        options.keySet().removeIf(FlinkSchemaProperties::isSchemaKey);
        options.putAll(d.getPropertiesMap());
        options.put(FlussOptions.BUCKET_NUMBER.key(), String.valueOf(d.getBucketCount()));
        if (!d.getBucketKeysList().isEmpty()) {
            options.put(FlussOptions.BUCKET_KEY.key(), String.join(",", d.getBucketKeysList()));
        }
        options.put(FlussOptions.BOOTSTRAP_SERVERS.key(), bootstrapServers);
        return CatalogTable.newBuilder()
                .schema(b.build())
                .comment(d.getHasComment() ? d.getComment() : "")
                .partitionKeys(new ArrayList<>(d.getPartitionKeysList()))
                .options(options)
                .build();
    }

    /** Name suffix of the virtual changelog table of a Fluss table ({@code orders$changelog}). */
    public static final String CHANGELOG_SUFFIX = "$changelog";

    /** Name suffix of the virtual binlog table of a primary-key Fluss table ({@code orders$binlog}). */
    public static final String BINLOG_SUFFIX = "$binlog";

    /** Name suffix of the virtual lake table of a lake-enabled Fluss table ({@code orders$lake}). */
    public static final String LAKE_SUFFIX = "$lake";

    /**
     * The {@code t$lake} virtual table: the table's columns, then the lake table's system columns as Fluss's
     * connector exposes them: {@code __bucket INT} (the Fluss bucket), {@code __offset BIGINT} (the log offset),
     * {@code __timestamp TIMESTAMP_LTZ(3)} (the commit time), nullable (null in a lake table older than them).
     */
    public static CatalogTable lakeTable(TableInfoPb info, String bootstrapServers) {
        CatalogTable base = toFlink(info, bootstrapServers);
        Schema.Builder b = Schema.newBuilder();
        for (Schema.UnresolvedColumn c : base.getUnresolvedSchema().getColumns()) {
            Schema.UnresolvedPhysicalColumn pc = (Schema.UnresolvedPhysicalColumn) c;
            b.column(pc.getName(), pc.getDataType());
        }
        base.getUnresolvedSchema().getPrimaryKey().ifPresent(pk -> b.primaryKeyNamed(pk.getConstraintName(),
                pk.getColumnNames()));
        b.column("__bucket", org.apache.flink.table.api.DataTypes.INT());
        b.column("__offset", org.apache.flink.table.api.DataTypes.BIGINT());
        b.column("__timestamp", org.apache.flink.table.api.DataTypes.TIMESTAMP_LTZ(3));
        return CatalogTable.newBuilder().schema(b.build()).comment(base.getComment())
                .partitionKeys(base.getPartitionKeys()).options(base.getOptions()).build();
    }

    /**
     * The {@code t$changelog} virtual table: {@code _change_type STRING} (+I, -U, +U, -D; +A for log tables),
     * {@code _log_offset BIGINT}, {@code _commit_timestamp TIMESTAMP_LTZ(3)}, then the table's columns, without
     * a primary key (every change is an insert-only row).
     */
    public static CatalogTable changelogTable(TableInfoPb info, String bootstrapServers) {
        CatalogTable base = toFlink(info, bootstrapServers, false);
        Schema.Builder b = Schema.newBuilder();
        b.column("_change_type", org.apache.flink.table.api.DataTypes.STRING().notNull());
        b.column("_log_offset", org.apache.flink.table.api.DataTypes.BIGINT().notNull());
        b.column("_commit_timestamp", org.apache.flink.table.api.DataTypes.TIMESTAMP_LTZ(3).notNull());
        for (Schema.UnresolvedColumn c : base.getUnresolvedSchema().getColumns()) {
            Schema.UnresolvedPhysicalColumn pc = (Schema.UnresolvedPhysicalColumn) c;
            b.column(pc.getName(), pc.getDataType());
        }
        return CatalogTable.newBuilder().schema(b.build()).comment(base.getComment())
                .partitionKeys(base.getPartitionKeys()).options(base.getOptions()).build();
    }

    /**
     * The {@code t$binlog} virtual table of a primary-key table: {@code _change_type STRING} (insert, update,
     * delete), {@code _log_offset BIGINT}, {@code _commit_timestamp TIMESTAMP_LTZ(3)}, then {@code before} and
     * {@code after}, each a nullable ROW of the table's columns; no primary key (every change is one insert-only row).
     */
    public static CatalogTable binlogTable(TableInfoPb info, String bootstrapServers) {
        if (info.getDescriptorPb().getSchema().getPrimaryKeysCount() == 0) {
            throw new IllegalArgumentException("Table " + info.getTablePath().getDatabaseName() + "."
                    + info.getTablePath().getTableName() + " has no primary key: $binlog is available for primary-key "
                    + "tables only (use $changelog)");
        }
        CatalogTable base = toFlink(info, bootstrapServers);
        List<org.apache.flink.table.api.DataTypes.Field> fields = new ArrayList<>();
        for (Schema.UnresolvedColumn c : base.getUnresolvedSchema().getColumns()) {
            Schema.UnresolvedPhysicalColumn pc = (Schema.UnresolvedPhysicalColumn) c;
            fields.add(org.apache.flink.table.api.DataTypes.FIELD(pc.getName(),
                    (org.apache.flink.table.types.DataType) pc.getDataType()));
        }
        org.apache.flink.table.types.DataType image = org.apache.flink.table.api.DataTypes.ROW(fields).nullable();
        Schema.Builder b = Schema.newBuilder();
        b.column("_change_type", org.apache.flink.table.api.DataTypes.STRING().notNull());
        b.column("_log_offset", org.apache.flink.table.api.DataTypes.BIGINT().notNull());
        b.column("_commit_timestamp", org.apache.flink.table.api.DataTypes.TIMESTAMP_LTZ(3).notNull());
        b.column("before", image);
        b.column("after", image);
        return CatalogTable.newBuilder().schema(b.build()).comment(base.getComment())
                .partitionKeys(List.of()).options(base.getOptions()).build();
    }

    static List<String> primaryKey(ResolvedSchema schema) {
        return schema.getPrimaryKey().map(UniqueConstraint::getColumns).orElse(Arrays.asList());
    }
}
