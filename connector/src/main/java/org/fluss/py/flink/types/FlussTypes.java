package org.fluss.py.flink.types;

import org.apache.flink.table.types.logical.ArrayType;
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
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.SmallIntType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.TinyIntType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.table.types.logical.VarCharType;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Fluss type strings (the canonical text of {@code fluss/types.py}, e.g. {@code "DECIMAL(10, 2) NOT NULL"},
 * {@code "TIMESTAMP_LTZ(3)"}, {@code "MAP<STRING NOT NULL, ARRAY<INT>>"}, {@code "ROW<a INT, `b c` STRING>"})
 * to Flink {@link LogicalType} and back.
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
 *   ARRAY&lt;T&gt;             ARRAY&lt;T&gt;
 *   MAP&lt;K, V&gt;            MAP&lt;K, V&gt; (Fluss map keys are NOT NULL: a Flink MAP with a nullable key type is
 *                        stored with its key NOT NULL)
 *   ROW&lt;f T 'd', ...&gt;     ROW&lt;f T 'd', ...&gt; (field descriptions kept)
 * </pre>
 *
 * The parser reads what {@code fluss/type_parser.py} reads: nullability at every depth, {@code ARRAY(T)} and
 * {@code ROW(...)} spellings, backtick-quoted field names, {@code name: type} fields. MULTISET, INTERVAL and the
 * other Flink types are rejected with a message naming the type.
 */
public final class FlussTypes {
    private static final Pattern PLAIN_IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    private static final java.util.Set<String> PARAMETERIZED = java.util.Set.of("CHAR", "CHARACTER", "DECIMAL", "DEC",
            "NUMERIC", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "BINARY");

    private FlussTypes() {}

    /** Parses a Fluss type string into a Flink logical type (nullability included). */
    public static LogicalType toFlink(String text) {
        Parser p = new Parser(text);
        LogicalType t = p.type();
        if (p.pos < p.tokens.size()) {
            throw p.error("unexpected '" + p.tokens.get(p.pos).text + "' after the type");
        }
        return t;
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
            case ARRAY:
                text = "ARRAY<" + toFluss(((ArrayType) t).getElementType()) + ">";
                break;
            case MAP: {
                MapType m = (MapType) t;
                text = "MAP<" + toFluss(m.getKeyType().copy(false)) + ", " + toFluss(m.getValueType()) + ">";
                break;
            }
            case ROW: {
                List<String> fields = new ArrayList<>();
                for (RowType.RowField f : ((RowType) t).getFields()) {
                    String field = quote(f.getName()) + " " + toFluss(f.getType());
                    if (f.getDescription().isPresent()) {
                        field += " '" + f.getDescription().get().replace("'", "''") + "'";
                    }
                    fields.add(field);
                }
                text = "ROW<" + String.join(", ", fields) + ">";
                break;
            }
            default:
                throw new IllegalArgumentException(
                        "Flink type " + t.asSummaryString() + " is not supported by Fluss tables");
        }
        return t.isNullable() ? text : text + " NOT NULL";
    }

    private static String quote(String name) {
        return PLAIN_IDENTIFIER.matcher(name).matches() ? name : "`" + name.replace("`", "``") + "`";
    }

    // ------------------------------------------------------------------------------------------- parsing

    private static final class Token {
        final char kind; // w word, n number, q quoted name, s string, p punctuation
        final String text;

        Token(char kind, String text) {
            this.kind = kind;
            this.text = text;
        }
    }

    private static final class Parser {
        final String source;
        final List<Token> tokens = new ArrayList<>();
        int pos;

        Parser(String source) {
            this.source = source;
            int i = 0;
            int n = source.length();
            while (i < n) {
                char c = source.charAt(i);
                if (Character.isWhitespace(c)) {
                    i++;
                } else if (Character.isLetter(c) || c == '_') {
                    int j = i;
                    while (j < n && (Character.isLetterOrDigit(source.charAt(j)) || source.charAt(j) == '_'
                            || source.charAt(j) == '$')) {
                        j++;
                    }
                    tokens.add(new Token('w', source.substring(i, j)));
                    i = j;
                } else if (Character.isDigit(c)) {
                    int j = i;
                    while (j < n && Character.isDigit(source.charAt(j))) {
                        j++;
                    }
                    tokens.add(new Token('n', source.substring(i, j)));
                    i = j;
                } else if (c == '`' || c == '\'') {
                    StringBuilder out = new StringBuilder();
                    int j = i + 1;
                    while (true) {
                        if (j >= n) {
                            throw error("unterminated " + (c == '`' ? "name" : "string"));
                        }
                        char d = source.charAt(j);
                        if (d == c) {
                            if (j + 1 < n && source.charAt(j + 1) == c) {
                                out.append(c);
                                j += 2;
                                continue;
                            }
                            break;
                        }
                        out.append(d);
                        j++;
                    }
                    tokens.add(new Token(c == '`' ? 'q' : 's', out.toString()));
                    i = j + 1;
                } else if ("<>(),:".indexOf(c) >= 0) {
                    tokens.add(new Token('p', String.valueOf(c)));
                    i++;
                } else {
                    throw error("unexpected character '" + c + "'");
                }
            }
        }

        IllegalArgumentException error(String why) {
            return new IllegalArgumentException("Unsupported Fluss data type '" + source + "': " + why);
        }

        String word(int ahead) {
            int i = pos + ahead;
            return i < tokens.size() && tokens.get(i).kind == 'w' ? tokens.get(i).text.toUpperCase(Locale.ROOT) : null;
        }

        boolean acceptWords(String... words) {
            for (int k = 0; k < words.length; k++) {
                if (!words[k].equals(word(k))) {
                    return false;
                }
            }
            pos += words.length;
            return true;
        }

        boolean accept(String punct) {
            if (pos < tokens.size() && tokens.get(pos).kind == 'p' && tokens.get(pos).text.equals(punct)) {
                pos++;
                return true;
            }
            return false;
        }

        String expect(String... puncts) {
            for (String p : puncts) {
                if (accept(p)) {
                    return p;
                }
            }
            throw error("expected " + String.join(" or ", puncts));
        }

        LogicalType type() {
            String name = word(0);
            if (name == null) {
                throw error("expected a type name");
            }
            pos++;
            if (name.equals("DOUBLE")) {
                acceptWords("PRECISION");
            }
            LogicalType inner;
            switch (name) {
                case "ARRAY": {
                    String close = expect("<", "(").equals("<") ? ">" : ")";
                    LogicalType element = type();
                    expect(close);
                    return nullability(new ArrayType(element));
                }
                case "MAP": {
                    String close = expect("<", "(").equals("<") ? ">" : ")";
                    LogicalType key = type();
                    expect(",");
                    LogicalType value = type();
                    expect(close);
                    return nullability(new MapType(key.copy(false), value));
                }
                case "ROW": {
                    String close = expect("<", "(").equals("<") ? ">" : ")";
                    List<RowType.RowField> fields = new ArrayList<>();
                    do {
                        fields.add(field());
                    } while (accept(","));
                    expect(close);
                    return nullability(new RowType(fields));
                }
                default:
                    inner = scalar(name, params());
            }
            if (acceptWords("WITHOUT", "TIME", "ZONE")) {
                if (!(inner instanceof TimestampType)) {
                    throw error("'WITHOUT TIME ZONE' only follows TIMESTAMP");
                }
            } else if (acceptWords("WITH", "LOCAL", "TIME", "ZONE")) {
                if (!(inner instanceof TimestampType)) {
                    throw error("'WITH LOCAL TIME ZONE' only follows TIMESTAMP");
                }
                inner = new LocalZonedTimestampType(((TimestampType) inner).getPrecision());
            }
            return nullability(inner);
        }

        LogicalType nullability(LogicalType t) {
            if (acceptWords("NOT", "NULL")) {
                return t.copy(false);
            }
            acceptWords("NULL");
            return t;
        }

        List<Integer> params() {
            List<Integer> out = new ArrayList<>();
            if (!accept("(")) {
                return out;
            }
            do {
                if (pos >= tokens.size() || tokens.get(pos).kind != 'n') {
                    throw error("expected a number");
                }
                out.add(Integer.valueOf(tokens.get(pos++).text));
            } while (accept(","));
            expect(")");
            return out;
        }

        RowType.RowField field() {
            if (pos >= tokens.size() || (tokens.get(pos).kind != 'w' && tokens.get(pos).kind != 'q')) {
                throw error("expected a ROW field name");
            }
            String name = tokens.get(pos++).text;
            accept(":");
            LogicalType t = type();
            if (pos < tokens.size() && tokens.get(pos).kind == 's') {
                return new RowType.RowField(name, t, tokens.get(pos++).text);
            }
            return new RowType.RowField(name, t);
        }

        LogicalType scalar(String name, List<Integer> p) {
            Integer a = p.isEmpty() ? null : p.get(0);
            Integer b = p.size() > 1 ? p.get(1) : null;
            if (a != null && !PARAMETERIZED.contains(name)) {
                throw error(name + " takes no parameters");
            }
            if (p.size() > 2 || (b != null && !name.equals("DECIMAL") && !name.equals("DEC")
                    && !name.equals("NUMERIC"))) {
                throw error(name + " takes at most " + (name.startsWith("DEC") ? "two" : "one") + " parameter(s)");
            }
            switch (name) {
                case "BOOLEAN":
                case "BOOL":
                    return new BooleanType();
                case "TINYINT":
                    return new TinyIntType();
                case "SMALLINT":
                    return new SmallIntType();
                case "INT":
                case "INTEGER":
                    return new IntType();
                case "BIGINT":
                    return new BigIntType();
                case "FLOAT":
                    return new FloatType();
                case "DOUBLE":
                    return new DoubleType();
                case "CHAR":
                case "CHARACTER":
                    return new CharType(a == null ? 1 : a);
                case "STRING":
                    return new VarCharType(VarCharType.MAX_LENGTH);
                case "DECIMAL":
                case "DEC":
                case "NUMERIC":
                    return new DecimalType(a == null ? 10 : a, b == null ? 0 : b);
                case "DATE":
                    return new DateType();
                case "TIME":
                    return new TimeType(a == null ? 0 : a);
                case "TIMESTAMP":
                    return new TimestampType(a == null ? 6 : a);
                case "TIMESTAMP_LTZ":
                    return new LocalZonedTimestampType(a == null ? 6 : a);
                case "BINARY":
                    return new BinaryType(a == null ? 1 : a);
                case "BYTES":
                    return new VarBinaryType(VarBinaryType.MAX_LENGTH);
                default:
                    throw error("unknown type '" + name + "'");
            }
        }
    }
}
