package org.fluss.py.flink.types;

import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.BinaryType;
import org.apache.flink.table.types.logical.BooleanType;
import org.apache.flink.table.types.logical.CharType;
import org.apache.flink.table.types.logical.DateType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.DoubleType;
import org.apache.flink.table.types.logical.FloatType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.SmallIntType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.TinyIntType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.table.types.logical.VarCharType;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Fluss type strings (the canonical text of {@code fluss/types.py}, e.g. {@code "DECIMAL(10, 2) NOT NULL"},
 * {@code "TIMESTAMP_LTZ(3)"}) to Flink {@link LogicalType} and back.
 *
 * <pre>
 *   Fluss                Flink
 *   BOOLEAN ... DOUBLE   same name
 *   CHAR(n)              CHAR(n)
 *   STRING               STRING (= VARCHAR(2147483647)); any VARCHAR(n) is stored as STRING
 *   DECIMAL(p, s)        DECIMAL(p, s)
 *   DATE, TIME(p)        DATE, TIME(p)
 *   TIMESTAMP(p)         TIMESTAMP(p)
 *   TIMESTAMP_LTZ(p)     TIMESTAMP_LTZ(p) (TIMESTAMP(p) WITH LOCAL TIME ZONE)
 *   BINARY(n)            BINARY(n)
 *   BYTES                BYTES (= VARBINARY(2147483647)); any VARBINARY(n) is stored as BYTES
 * </pre>
 *
 * ARRAY, MAP, ROW, MULTISET, INTERVAL and the other Flink types are rejected with a message naming the type.
 */
public final class FlussTypes {

    private static final Pattern TYPE = Pattern.compile(
            "^([A-Z_]+(?: PRECISION)?)\\s*(?:\\(\\s*(\\d+)\\s*(?:,\\s*(\\d+)\\s*)?\\))?"
                    + "( WITHOUT TIME ZONE| WITH LOCAL TIME ZONE)?( NOT NULL| NULL)?$");

    private FlussTypes() {}

    /** Parses a Fluss type string into a Flink logical type (nullability included). */
    public static LogicalType toFlink(String text) {
        String norm = text.trim().toUpperCase(Locale.ROOT).replaceAll("\\s+", " ");
        Matcher m = TYPE.matcher(norm);
        if (!m.matches()) {
            throw new IllegalArgumentException("Unsupported Fluss data type '" + text + "'");
        }
        String name = m.group(1);
        Integer a = m.group(2) == null ? null : Integer.valueOf(m.group(2));
        Integer b = m.group(3) == null ? null : Integer.valueOf(m.group(3));
        boolean nullable = m.group(5) == null || !m.group(5).trim().equals("NOT NULL");
        if (m.group(4) != null && m.group(4).contains("LOCAL")) {
            name = "TIMESTAMP_LTZ";
        }
        switch (name) {
            case "BOOLEAN":
            case "BOOL":
                return new BooleanType(nullable);
            case "TINYINT":
                return new TinyIntType(nullable);
            case "SMALLINT":
                return new SmallIntType(nullable);
            case "INT":
            case "INTEGER":
                return new IntType(nullable);
            case "BIGINT":
                return new BigIntType(nullable);
            case "FLOAT":
                return new FloatType(nullable);
            case "DOUBLE":
            case "DOUBLE PRECISION":
                return new DoubleType(nullable);
            case "CHAR":
            case "CHARACTER":
                return new CharType(nullable, a == null ? 1 : a);
            case "STRING":
                return new VarCharType(nullable, VarCharType.MAX_LENGTH);
            case "DECIMAL":
            case "DEC":
            case "NUMERIC":
                return new DecimalType(nullable, a == null ? 10 : a, b == null ? 0 : b);
            case "DATE":
                return new DateType(nullable);
            case "TIME":
                return new TimeType(nullable, a == null ? 0 : a);
            case "TIMESTAMP":
                return new TimestampType(nullable, a == null ? 6 : a);
            case "TIMESTAMP_LTZ":
                return new LocalZonedTimestampType(nullable, a == null ? 6 : a);
            case "BINARY":
                return new BinaryType(nullable, a == null ? 1 : a);
            case "BYTES":
                return new VarBinaryType(nullable, VarBinaryType.MAX_LENGTH);
            default:
                throw new IllegalArgumentException("Unsupported Fluss data type '" + text + "'");
        }
    }

    /** The canonical Fluss type string of a Flink logical type (with " NOT NULL" when not nullable). */
    public static String toFluss(LogicalType t) {
        String text;
        switch (t.getTypeRoot()) {
            case BOOLEAN:
                text = "BOOLEAN";
                break;
            case TINYINT:
                text = "TINYINT";
                break;
            case SMALLINT:
                text = "SMALLINT";
                break;
            case INTEGER:
                text = "INT";
                break;
            case BIGINT:
                text = "BIGINT";
                break;
            case FLOAT:
                text = "FLOAT";
                break;
            case DOUBLE:
                text = "DOUBLE";
                break;
            case CHAR:
                text = "CHAR(" + ((CharType) t).getLength() + ")";
                break;
            case VARCHAR:
                text = "STRING";
                break;
            case DECIMAL:
                DecimalType d = (DecimalType) t;
                text = "DECIMAL(" + d.getPrecision() + ", " + d.getScale() + ")";
                break;
            case DATE:
                text = "DATE";
                break;
            case TIME_WITHOUT_TIME_ZONE:
                text = "TIME(" + ((TimeType) t).getPrecision() + ")";
                break;
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                text = "TIMESTAMP(" + ((TimestampType) t).getPrecision() + ")";
                break;
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                text = "TIMESTAMP_LTZ(" + ((LocalZonedTimestampType) t).getPrecision() + ")";
                break;
            case BINARY:
                text = "BINARY(" + ((BinaryType) t).getLength() + ")";
                break;
            case VARBINARY:
                text = "BYTES";
                break;
            default:
                throw new IllegalArgumentException(
                        "Flink type " + t.asSummaryString() + " is not supported by Fluss tables yet");
        }
        return t.isNullable() ? text : text + " NOT NULL";
    }
}
