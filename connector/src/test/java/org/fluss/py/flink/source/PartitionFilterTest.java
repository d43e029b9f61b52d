package org.fluss.py.flink.source;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.expressions.CallExpression;
import org.apache.flink.table.expressions.FieldReferenceExpression;
import org.apache.flink.table.expressions.ResolvedExpression;
import org.apache.flink.table.expressions.ValueLiteralExpression;
import org.apache.flink.table.functions.BuiltInFunctionDefinition;
import org.apache.flink.table.functions.BuiltInFunctionDefinitions;
import org.apache.flink.table.types.logical.LogicalType;
import org.junit.jupiter.api.Test;

import java.time.LocalDate;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Flink filters on partition keys as partition filters, evaluated against partition names. */
class PartitionFilterTest {
    private static final List<String> KEYS = List.of("region", "yr", "day");
    private static final Map<String, LogicalType> TYPES = Map.of(
            "region", DataTypes.STRING().getLogicalType(), "yr", DataTypes.INT().getLogicalType(),
            "day", DataTypes.DATE().getLogicalType());

    private static FieldReferenceExpression field(String name) {
        return new FieldReferenceExpression(name, DataTypes.of(TYPES.get(name)), 0, KEYS.indexOf(name));
    }

    private static CallExpression call(BuiltInFunctionDefinition f, ResolvedExpression... args) {
        return CallExpression.permanent(f, List.of(args), DataTypes.BOOLEAN());
    }

    private static boolean test(PartitionFilter f, String partitionName) {
        return f.test(PartitionFilter.spec(partitionName, KEYS));
    }

    @Test
    void comparisonsUseTheKeyType() {
        PartitionFilter eq = PartitionFilter.of(call(BuiltInFunctionDefinitions.EQUALS, field("region"),
                new ValueLiteralExpression("EU")), TYPES);
        assertTrue(test(eq, "EU$2024$2024-01-01"));
        assertFalse(test(eq, "US$2024$2024-01-01"));
        // numbers compare as numbers, not strings ("9" > "10" as strings)
        PartitionFilter gt = PartitionFilter.of(call(BuiltInFunctionDefinitions.GREATER_THAN, field("yr"),
                new ValueLiteralExpression(9)), TYPES);
        assertTrue(test(gt, "EU$10$2024-01-01"));
        assertFalse(test(gt, "EU$9$2024-01-01"));
        // literal on the left: 2024-01-02 <= day
        PartitionFilter le = PartitionFilter.of(call(BuiltInFunctionDefinitions.LESS_THAN_OR_EQUAL,
                new ValueLiteralExpression(LocalDate.of(2024, 1, 2)), field("day")), TYPES);
        assertTrue(test(le, "EU$1$2024-01-02"));
        assertFalse(test(le, "EU$1$2024-01-01"));
    }

    @Test
    void inAndOrAndNullChecks() {
        PartitionFilter in = PartitionFilter.of(call(BuiltInFunctionDefinitions.IN, field("region"),
                new ValueLiteralExpression("EU"), new ValueLiteralExpression("APAC")), TYPES);
        assertTrue(test(in, "APAC$1$2024-01-01"));
        assertFalse(test(in, "US$1$2024-01-01"));
        PartitionFilter or = PartitionFilter.of(call(BuiltInFunctionDefinitions.OR,
                call(BuiltInFunctionDefinitions.EQUALS, field("yr"), new ValueLiteralExpression(1)),
                call(BuiltInFunctionDefinitions.NOT_EQUALS, field("region"), new ValueLiteralExpression("US"))),
                TYPES);
        assertTrue(test(or, "US$1$2024-01-01"));
        assertTrue(test(or, "EU$2$2024-01-01"));
        assertFalse(test(or, "US$2$2024-01-01"));
        assertFalse(test(PartitionFilter.of(call(BuiltInFunctionDefinitions.IS_NULL, field("yr")), TYPES),
                "EU$1$2024-01-01"));
        PartitionFilter both = PartitionFilter.and(List.of(in, or));
        assertTrue(test(both, "EU$2$2024-01-01"));
        assertFalse(test(both, "US$1$2024-01-01"));
    }

    @Test
    void filtersOnOtherColumnsOrExpressionsAreNotTaken() {
        Map<String, LogicalType> withOther = new java.util.HashMap<>(TYPES);
        FieldReferenceExpression other = new FieldReferenceExpression("amount", DataTypes.BIGINT(), 0, 5);
        assertNull(PartitionFilter.of(call(BuiltInFunctionDefinitions.EQUALS, other,
                new ValueLiteralExpression(5L)), withOther));
        // an OR mixing a partition key and another column cannot prune
        assertNull(PartitionFilter.of(call(BuiltInFunctionDefinitions.OR,
                call(BuiltInFunctionDefinitions.EQUALS, field("region"), new ValueLiteralExpression("EU")),
                call(BuiltInFunctionDefinitions.EQUALS, other, new ValueLiteralExpression(5L))), TYPES));
        // NOT is not taken (see the class comment)
        assertNull(PartitionFilter.of(call(BuiltInFunctionDefinitions.NOT,
                call(BuiltInFunctionDefinitions.EQUALS, field("region"), new ValueLiteralExpression("EU"))), TYPES));
        assertNull(PartitionFilter.and(List.of()));
    }

    @Test
    void partitionNamesSplitIntoSpecs() {
        assertEquals(Map.of("region", "EU", "yr", "2024", "day", "2024-01-01"),
                PartitionFilter.spec("EU$2024$2024-01-01", KEYS));
    }
}
