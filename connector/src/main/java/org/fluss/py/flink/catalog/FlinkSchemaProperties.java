package org.fluss.py.flink.catalog;

import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.WatermarkSpec;
import org.apache.flink.table.catalog.exceptions.CatalogException;
import org.apache.flink.table.expressions.DefaultSqlFactory;
import org.apache.flink.table.expressions.ResolvedExpression;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a Fluss table cannot hold itself but a Flink table has: computed columns and watermarks, kept in the Fluss
 * table's custom properties with the keys Flink's catalog properties (and Fluss's Flink catalog) use:
 *
 * <pre>
 * schema.{i}.name, schema.{i}.data-type, schema.{i}.expr [, schema.{i}.comment]   computed column at position i
 * schema.watermark.{j}.rowtime, .strategy.expr, .strategy.data-type               watermark j
 * </pre>
 *
 * Expressions are stored as Flink SQL ({@code ResolvedExpression#asSerializableString}) and parsed again by Flink
 * when the table is read back, so a table created with {@code ptime AS PROCTIME()} or
 * {@code WATERMARK FOR ts AS ts - INTERVAL '5' SECOND} has them in every later session.
 */
public final class FlinkSchemaProperties {
    private FlinkSchemaProperties() {}

    public static final String PREFIX = "schema.";
    private static final String WATERMARK = "schema.watermark.";

    /** A computed column read back: its name, SQL expression and comment (null: none). */
    public static final class ComputedColumn {
        public final String name;
        public final String expression;
        public final String comment;

        ComputedColumn(String name, String expression, String comment) {
            this.name = name;
            this.expression = expression;
            this.comment = comment;
        }
    }

    public static boolean isSchemaKey(String key) {
        return key.startsWith(PREFIX);
    }

    private static String sql(String table, String what, ResolvedExpression e) {
        try {
            return e.asSerializableString(DefaultSqlFactory.INSTANCE);
        } catch (RuntimeException ex) {
            throw new CatalogException("Table " + table + ": " + what + " '" + e.asSummaryString()
                    + "' cannot be stored by the Fluss catalog (" + ex.getMessage() + ")");
        }
    }

    /** The custom properties of the computed columns and watermarks of {@code schema}. */
    public static Map<String, String> serialize(String table, ResolvedSchema schema) {
        Map<String, String> out = new LinkedHashMap<>();
        List<Column> columns = schema.getColumns();
        for (int i = 0; i < columns.size(); i++) {
            Column c = columns.get(i);
            if (!(c instanceof Column.ComputedColumn)) {
                continue;
            }
            ResolvedExpression e = ((Column.ComputedColumn) c).getExpression();
            out.put(PREFIX + i + ".name", c.getName());
            out.put(PREFIX + i + ".data-type", c.getDataType().getLogicalType().asSerializableString());
            out.put(PREFIX + i + ".expr", sql(table, "computed column '" + c.getName() + "'", e));
            if (c.getComment().isPresent()) {
                out.put(PREFIX + i + ".comment", c.getComment().get());
            }
        }
        List<WatermarkSpec> watermarks = schema.getWatermarkSpecs();
        for (int j = 0; j < watermarks.size(); j++) {
            WatermarkSpec w = watermarks.get(j);
            ResolvedExpression e = w.getWatermarkExpression();
            out.put(WATERMARK + j + ".rowtime", w.getRowtimeAttribute());
            out.put(WATERMARK + j + ".strategy.expr", sql(table, "watermark of '" + w.getRowtimeAttribute() + "'", e));
            out.put(WATERMARK + j + ".strategy.data-type", e.getOutputDataType().getLogicalType()
                    .asSerializableString());
        }
        return out;
    }

    /** The computed columns stored in {@code custom}, by position in the table's column list. */
    public static Map<Integer, ComputedColumn> computedColumns(Map<String, String> custom) {
        Map<Integer, ComputedColumn> out = new TreeMap<>();
        for (Map.Entry<String, String> e : custom.entrySet()) {
            String k = e.getKey();
            if (!k.startsWith(PREFIX) || k.startsWith(WATERMARK) || !k.endsWith(".name")) {
                continue;
            }
            String index = k.substring(PREFIX.length(), k.length() - ".name".length());
            if (!index.chars().allMatch(Character::isDigit) || index.isEmpty()) {
                continue;
            }
            String expr = custom.get(PREFIX + index + ".expr");
            if (expr != null) {
                out.put(Integer.parseInt(index), new ComputedColumn(e.getValue(), expr,
                        custom.get(PREFIX + index + ".comment")));
            }
        }
        return out;
    }

    /** The watermarks stored in {@code custom}: rowtime column -> SQL expression, in order. */
    public static Map<String, String> watermarks(Map<String, String> custom) {
        Map<Integer, String[]> byIndex = new TreeMap<>();
        for (Map.Entry<String, String> e : custom.entrySet()) {
            String k = e.getKey();
            if (k.startsWith(WATERMARK) && k.endsWith(".rowtime")) {
                String index = k.substring(WATERMARK.length(), k.length() - ".rowtime".length());
                String expr = custom.get(WATERMARK + index + ".strategy.expr");
                if (expr != null && index.chars().allMatch(Character::isDigit) && !index.isEmpty()) {
                    byIndex.put(Integer.parseInt(index), new String[] {e.getValue(), expr});
                }
            }
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (String[] w : byIndex.values()) {
            out.put(w[0], w[1]);
        }
        return out;
    }

    /** Every schema key of {@code custom} (to replace them all when the derived schema changes). */
    public static Map<String, String> schemaKeys(Map<String, String> custom) {
        Map<String, String> out = new HashMap<>();
        custom.forEach((k, v) -> {
            if (isSchemaKey(k)) {
                out.put(k, v);
            }
        });
        return out;
    }
}
