/*
 * Prints a Paimon table with Paimon's public Java API only (no Fluss code): the readability check of the lake
 * tables written by the tiering job.
 *
 *   java -cp <paimon-bundle, hadoop, slf4j, log4j jars> PaimonDump.java <warehouse> <database> <table> [<table>...]
 *
 * Output, JSON lines per table: first {"table": ..., "schema": {...}} (fields with Paimon type strings, primary
 * keys, partition keys, options), then one {"kind": "+I", "row": {...}} per row of the latest snapshot as Paimon's
 * reader returns it (merged for primary-key tables). Value forms: numbers as JSON numbers (NaN/Infinity as strings), strings,
 * DECIMAL as its plain string, DATE as yyyy-MM-dd, TIME as HH:mm:ss.SSS, TIMESTAMP as
 * yyyy-MM-ddTHH:mm:ss.nnnnnnnnn (LTZ: UTC with a Z), binary as lower-case hex, ARRAY/MAP/ROW nested.
 */

import java.time.LocalDate;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowType;

public class PaimonDump {

    private static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSS");

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: PaimonDump <warehouse> <database> <table> [<table>...]");
            System.exit(2);
        }
        Options options = new Options();
        options.set("warehouse", args[0]);
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
            for (int i = 2; i < args.length; i++) {
                dump(catalog.getTable(Identifier.create(args[1], args[i])), args[i]);
            }
        }
    }

    private static void dump(Table table, String name) throws Exception {
        RowType rowType = table.rowType();
        System.out.println("{\"table\": " + str(name) + ", \"schema\": " + schema(table, rowType) + "}");
        ReadBuilder builder = table.newReadBuilder();
        List<Split> splits = builder.newScan().plan().splits();
        try (RecordReader<InternalRow> reader = builder.newRead().createReader(splits)) {
            reader.forEachRemaining(row -> System.out.println(
                    "{\"kind\": " + str(row.getRowKind().shortString()) + ", \"row\": " + row(row, rowType) + "}"));
        }
    }

    private static String schema(Table table, RowType rowType) {
        List<String> fields = new ArrayList<>();
        for (DataField f : rowType.getFields()) {
            fields.add("{\"name\": " + str(f.name()) + ", \"type\": " + str(f.type().toString()) + "}");
        }
        List<String> options = new ArrayList<>();
        for (Map.Entry<String, String> e : new TreeMap<>(table.options()).entrySet()) {
            options.add(str(e.getKey()) + ": " + str(e.getValue()));
        }
        return "{\"fields\": [" + String.join(", ", fields) + "], \"primary_keys\": " + strings(table.primaryKeys())
                + ", \"partition_keys\": " + strings(table.partitionKeys()) + ", \"options\": {"
                + String.join(", ", options) + "}}";
    }

    private static String row(InternalRow row, RowType type) {
        List<String> out = new ArrayList<>();
        List<DataField> fields = type.getFields();
        for (int i = 0; i < fields.size(); i++) {
            Object v = InternalRow.createFieldGetter(fields.get(i).type(), i).getFieldOrNull(row);
            out.add(str(fields.get(i).name()) + ": " + value(v, fields.get(i).type()));
        }
        return "{" + String.join(", ", out) + "}";
    }

    private static String value(Object v, DataType type) {
        if (v == null) {
            return "null";
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
                return v.toString();
            case FLOAT:
            case DOUBLE:
                double d = ((Number) v).doubleValue();
                return Double.isNaN(d) || Double.isInfinite(d) ? str(Double.toString(d)) : Double.toString(d);
            case CHAR:
            case VARCHAR:
                return str(((BinaryString) v).toString());
            case DECIMAL:
                return str(((Decimal) v).toBigDecimal().toPlainString());
            case DATE:
                return str(LocalDate.ofEpochDay((Integer) v).toString());
            case TIME_WITHOUT_TIME_ZONE:
                return str(LocalTime.ofNanoOfDay((Integer) v * 1_000_000L)
                        .format(DateTimeFormatter.ofPattern("HH:mm:ss.SSS")));
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return str(((Timestamp) v).toLocalDateTime().format(TS));
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                // an instant: Paimon keeps it as epoch milliseconds + nanos, i.e. the UTC wall-clock time
                return str(((Timestamp) v).toLocalDateTime().format(TS) + "Z");
            case BINARY:
            case VARBINARY:
                StringBuilder hex = new StringBuilder();
                for (byte b : (byte[]) v) {
                    hex.append(String.format("%02x", b));
                }
                return str(hex.toString());
            case ARRAY:
                return array((InternalArray) v, ((ArrayType) type).getElementType());
            case MAP:
                MapType map = (MapType) type;
                InternalMap m = (InternalMap) v;
                return "{\"keys\": " + array(m.keyArray(), map.getKeyType()) + ", \"values\": "
                        + array(m.valueArray(), map.getValueType()) + "}";
            case ROW:
                return row((InternalRow) v, (RowType) type);
            default:
                return str(v.toString());
        }
    }

    private static String array(InternalArray a, DataType element) {
        InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < a.size(); i++) {
            out.add(value(getter.getElementOrNull(a, i), element));
        }
        return "[" + String.join(", ", out) + "]";
    }

    private static String strings(List<String> values) {
        List<String> out = new ArrayList<>();
        for (String v : values) {
            out.add(str(v));
        }
        return "[" + String.join(", ", out) + "]";
    }

    private static String str(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }
}
