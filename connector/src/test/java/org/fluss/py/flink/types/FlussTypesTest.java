package org.fluss.py.flink.types;

import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.table.types.logical.YearMonthIntervalType;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.MultisetType;
import org.apache.flink.table.types.logical.RowType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FlussTypesTest {

    @ParameterizedTest
    @ValueSource(strings = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR(5)",
            "STRING", "DECIMAL(10, 2)", "DECIMAL(38, 18) NOT NULL", "DATE", "TIME(0)", "TIME(3)", "TIMESTAMP(3)",
            "TIMESTAMP(6) NOT NULL", "TIMESTAMP(9)", "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(0)", "BINARY(4)", "BYTES",
            "INT NOT NULL", "STRING NOT NULL", "ARRAY<INT>", "ARRAY<INT NOT NULL> NOT NULL",
            "MAP<STRING NOT NULL, ARRAY<DECIMAL(10, 2)>>", "ROW<a INT, `b c` STRING NOT NULL 'it''s'>",
            "ARRAY<ROW<x TIMESTAMP_LTZ(3), y MAP<INT NOT NULL, BYTES>>> NOT NULL"})
    void canonicalFlussTypeStringsRoundTripThroughFlink(String text) {
        assertEquals(text, FlussTypes.toFluss(FlussTypes.toFlink(text)));
    }

    @Test
    void flussTypesMapToTheMatchingFlinkTypes() {
        assertEquals(new VarCharType(true, VarCharType.MAX_LENGTH), FlussTypes.toFlink("STRING"));
        assertEquals(new VarBinaryType(true, VarBinaryType.MAX_LENGTH), FlussTypes.toFlink("BYTES"));
        assertEquals(new LocalZonedTimestampType(true, 3), FlussTypes.toFlink("TIMESTAMP_LTZ(3)"));
        assertEquals(new TimestampType(false, 6), FlussTypes.toFlink("timestamp(6) not null"));
        assertEquals(new LocalZonedTimestampType(true, 3),
                FlussTypes.toFlink("TIMESTAMP(3) WITH LOCAL TIME ZONE"));
        LogicalType dec = FlussTypes.toFlink("DECIMAL(10, 2) NOT NULL");
        assertFalse(dec.isNullable());
        assertEquals("DECIMAL(10, 2) NOT NULL", dec.asSummaryString());
        assertTrue(FlussTypes.toFlink("INTEGER").is(org.apache.flink.table.types.logical.LogicalTypeRoot.INTEGER));
    }

    @Test
    void boundedVarcharAndVarbinaryAreStoredAsStringAndBytes() {
        assertEquals("STRING", FlussTypes.toFluss(new VarCharType(20)));
        assertEquals("BYTES NOT NULL", FlussTypes.toFluss(new VarBinaryType(false, 8)));
    }

    @Test
    void nestedTypesMapToFlinksAndMapKeysBecomeNotNull() {
        assertEquals(new ArrayType(new IntType(false)), FlussTypes.toFlink("array<int not null>"));
        assertEquals(new MapType(new VarCharType(false, VarCharType.MAX_LENGTH), new IntType()),
                FlussTypes.toFlink("map<string NOT NULL,int>"));
        assertEquals("MAP<STRING NOT NULL, INT>", FlussTypes.toFluss(new MapType(new VarCharType(VarCharType.MAX_LENGTH),
                new IntType())));
        RowType row = (RowType) FlussTypes.toFlink("row<seq: int, label: string>");
        assertEquals(List.of("seq", "label"), row.getFieldNames());
        assertEquals("ROW<seq INT, label STRING>", FlussTypes.toFluss(row));
        assertEquals(new ArrayType(false, new IntType()), FlussTypes.toFlink("ARRAY(INT) NOT NULL"));
    }

    @Test
    void unsupportedTypesAreRejectedNamingTheType() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> FlussTypes.toFluss(new MultisetType(new IntType())));
        assertTrue(e.getMessage().contains("MULTISET<INT>"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> FlussTypes.toFluss(new YearMonthIntervalType(YearMonthIntervalType.YearMonthResolution.YEAR)));
        for (String bad : new String[] {"MAP<INT>", "ARRAY<INT", "INT(3)", "ROW<>", "FOO"}) {
            IllegalArgumentException p = assertThrows(IllegalArgumentException.class, () -> FlussTypes.toFlink(bad));
            assertTrue(p.getMessage().contains(bad), p.getMessage());
        }
    }
}
