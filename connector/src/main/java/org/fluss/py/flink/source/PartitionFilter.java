package org.fluss.py.flink.source;

import org.apache.flink.table.expressions.CallExpression;
import org.apache.flink.table.expressions.FieldReferenceExpression;
import org.apache.flink.table.expressions.ResolvedExpression;
import org.apache.flink.table.expressions.ValueLiteralExpression;
import org.apache.flink.table.functions.BuiltInFunctionDefinitions;
import org.apache.flink.table.functions.FunctionDefinition;
import org.apache.flink.table.types.logical.LogicalType;

import java.io.Serializable;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A filter on the partition keys pushed into the source, evaluated against partition specs (key → the value
 * as a string, as in the partition name). The enumerator applies it to every partition it lists, at start and
 * at each discovery, so partitions created later are filtered the same way. Built from Flink filters over
 * partition-key columns only: {@code = <> < <= > >=} against a literal, {@code IN}, {@code IS [NOT] NULL},
 * {@code AND}, {@code OR}; values compare as strings (STRING/VARCHAR; partition values are ASCII, so this is
 * Flink's byte order too), numbers (TINYINT..BIGINT), booleans or dates, as the key's type says. Every row of a
 * partition has the partition's values, so the filter is exact and the planner need not apply it again.
 * (A value that does not parse as its key's type keeps its partition; there is no {@code NOT}, under which that
 * would drop it.)
 */
public abstract class PartitionFilter implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Whether the partition with this spec may hold matching rows. */
    public abstract boolean test(Map<String, String> spec);

    /** The spec of a Fluss partition name (values joined by {@code $}, in partition-key order). */
    public static Map<String, String> spec(String partitionName, List<String> partitionKeys) {
        String[] values = partitionName.split("\\$", -1);
        Map<String, String> spec = new HashMap<>();
        for (int i = 0; i < partitionKeys.size() && i < values.length; i++) {
            spec.put(partitionKeys.get(i), values[i]);
        }
        return spec;
    }

    /** All of the filters (null when the list is empty). */
    public static PartitionFilter and(List<PartitionFilter> filters) {
        if (filters.isEmpty()) {
            return null;
        }
        return filters.size() == 1 ? filters.get(0) : new Junction(filters, true);
    }

    /**
     * The filter for a Flink filter expression over partition keys only (with their types), or null when the
     * expression touches other columns or uses something this class cannot evaluate exactly.
     */
    public static PartitionFilter of(ResolvedExpression e, Map<String, LogicalType> keyTypes) {
        if (!(e instanceof CallExpression)) {
            return null;
        }
        CallExpression call = (CallExpression) e;
        FunctionDefinition f = call.getFunctionDefinition();
        List<ResolvedExpression> args = call.getResolvedChildren();
        if (f == BuiltInFunctionDefinitions.AND || f == BuiltInFunctionDefinitions.OR) {
            List<PartitionFilter> parts = new ArrayList<>();
            for (ResolvedExpression a : args) {
                PartitionFilter p = of(a, keyTypes);
                if (p == null) {
                    return null;
                }
                parts.add(p);
            }
            return new Junction(parts, f == BuiltInFunctionDefinitions.AND);
        }
        if (f == BuiltInFunctionDefinitions.IS_NULL || f == BuiltInFunctionDefinitions.IS_NOT_NULL) {
            String key = keyName(args.get(0), keyTypes);
            return key == null ? null : new Constant(f == BuiltInFunctionDefinitions.IS_NOT_NULL); // never null
        }
        if (f == BuiltInFunctionDefinitions.IN) {
            String key = keyName(args.get(0), keyTypes);
            if (key == null) {
                return null;
            }
            List<PartitionFilter> any = new ArrayList<>();
            for (ResolvedExpression a : args.subList(1, args.size())) {
                Comparable<?> v = literal(a, keyTypes.get(key));
                if (v == null) {
                    return null;
                }
                any.add(new Compare(key, keyTypes.get(key), Op.EQ, v));
            }
            return new Junction(any, false);
        }
        Op op = Op.of(f);
        if (op == null || args.size() != 2) {
            return null;
        }
        String key = keyName(args.get(0), keyTypes);
        ResolvedExpression other = args.get(1);
        if (key == null) { // literal <op> key
            key = keyName(args.get(1), keyTypes);
            other = args.get(0);
            op = op.flipped();
        }
        if (key == null) {
            return null;
        }
        Comparable<?> v = literal(other, keyTypes.get(key));
        return v == null ? null : new Compare(key, keyTypes.get(key), op, v);
    }

    private static String keyName(ResolvedExpression e, Map<String, LogicalType> keyTypes) {
        if (e instanceof FieldReferenceExpression && keyTypes.containsKey(((FieldReferenceExpression) e).getName())) {
            return ((FieldReferenceExpression) e).getName();
        }
        return null;
    }

    /** A literal as the comparable value of the key's type (null: not a literal, NULL, or an unsupported type). */
    private static Comparable<?> literal(ResolvedExpression e, LogicalType type) {
        if (!(e instanceof ValueLiteralExpression) || ((ValueLiteralExpression) e).isNull()) {
            return null;
        }
        ValueLiteralExpression l = (ValueLiteralExpression) e;
        switch (type.getTypeRoot()) {
            case VARCHAR: // not CHAR(n): its comparisons pad
                return l.getValueAs(String.class).orElse(null);
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
                return l.getValueAs(Number.class).map(Number::longValue).orElse(null);
            case BOOLEAN:
                return l.getValueAs(Boolean.class).orElse(null);
            case DATE:
                return l.getValueAs(LocalDate.class).orElse(null);
            default:
                return null;
        }
    }

    /** A partition value (string) as the comparable value of the key's type; null when it does not parse. */
    static Comparable<?> parse(String value, LogicalType type) {
        try {
            switch (type.getTypeRoot()) {
                case TINYINT:
                case SMALLINT:
                case INTEGER:
                case BIGINT:
                    return Long.parseLong(value);
                case BOOLEAN:
                    return Boolean.parseBoolean(value);
                case DATE:
                    return LocalDate.parse(value);
                default:
                    return value;
            }
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** Comparison operators. */
    enum Op {
        EQ, NE, LT, LE, GT, GE;

        static Op of(FunctionDefinition f) {
            if (f == BuiltInFunctionDefinitions.EQUALS) {
                return EQ;
            } else if (f == BuiltInFunctionDefinitions.NOT_EQUALS) {
                return NE;
            } else if (f == BuiltInFunctionDefinitions.LESS_THAN) {
                return LT;
            } else if (f == BuiltInFunctionDefinitions.LESS_THAN_OR_EQUAL) {
                return LE;
            } else if (f == BuiltInFunctionDefinitions.GREATER_THAN) {
                return GT;
            } else if (f == BuiltInFunctionDefinitions.GREATER_THAN_OR_EQUAL) {
                return GE;
            }
            return null;
        }

        Op flipped() {
            switch (this) {
                case LT:
                    return GT;
                case LE:
                    return GE;
                case GT:
                    return LT;
                case GE:
                    return LE;
                default:
                    return this;
            }
        }

        boolean holds(int cmp) {
            switch (this) {
                case EQ:
                    return cmp == 0;
                case NE:
                    return cmp != 0;
                case LT:
                    return cmp < 0;
                case LE:
                    return cmp <= 0;
                case GT:
                    return cmp > 0;
                default:
                    return cmp >= 0;
            }
        }
    }

    /** {@code key <op> literal}. */
    static final class Compare extends PartitionFilter {
        private static final long serialVersionUID = 1L;
        private final String key;
        private final LogicalType type;
        private final Op op;
        private final Comparable<?> value;

        Compare(String key, LogicalType type, Op op, Comparable<?> value) {
            this.key = key;
            this.type = type;
            this.op = op;
            this.value = value;
        }

        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        public boolean test(Map<String, String> spec) {
            String raw = spec.get(key);
            Comparable actual = raw == null ? null : parse(raw, type);
            if (actual == null) {
                return true; // cannot tell: keep the partition (the planner filters the rows anyway)
            }
            return op.holds(actual.compareTo(value));
        }

        @Override
        public String toString() {
            return key + " " + op + " " + value;
        }
    }

    /** AND / OR of filters. */
    static final class Junction extends PartitionFilter {
        private static final long serialVersionUID = 1L;
        private final List<PartitionFilter> parts;
        private final boolean and;

        Junction(List<PartitionFilter> parts, boolean and) {
            this.parts = new ArrayList<>(parts);
            this.and = and;
        }

        @Override
        public boolean test(Map<String, String> spec) {
            for (PartitionFilter p : parts) {
                if (p.test(spec) != and) {
                    return !and;
                }
            }
            return and;
        }

        @Override
        public String toString() {
            return parts.toString().replace(", ", and ? " AND " : " OR ");
        }
    }

    /** Always true or always false. */
    static final class Constant extends PartitionFilter {
        private static final long serialVersionUID = 1L;
        private final boolean value;

        Constant(boolean value) {
            this.value = value;
        }

        @Override
        public boolean test(Map<String, String> spec) {
            return value;
        }
    }
}
