package org.fluss.py.flink.lake;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.types.DataTypes;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Paimon rows of a lake table become Flink rows of the table's columns. */
class LakeRowConverterTest {
    private static RowType flink(LogicalType... types) {
        List<RowType.RowField> fields = new ArrayList<>();
        for (int i = 0; i < types.length; i++) {
            fields.add(new RowType.RowField("f" + i, types[i]));
        }
        return new RowType(fields);
    }

    @Test
    void valuesKeepTheirPrecision() {
        LocalDateTime micros = LocalDateTime.of(2026, 1, 1, 0, 0, 1, 7_000);
        GenericRow row = GenericRow.of(5L, BinaryString.fromString("e5"),
                Decimal.fromBigDecimal(new BigDecimal("1.25"), 10, 2), Timestamp.fromLocalDateTime(micros),
                new byte[] {1, 2}, null);
        RowType flinkType = flink(new BigIntType(false), new VarCharType(VarCharType.MAX_LENGTH),
                new DecimalType(10, 2), new TimestampType(6), new VarBinaryType(VarBinaryType.MAX_LENGTH),
                new BigIntType());
        org.apache.paimon.types.RowType paimonType = org.apache.paimon.types.RowType.of(DataTypes.BIGINT(),
                DataTypes.STRING(), DataTypes.DECIMAL(10, 2), DataTypes.TIMESTAMP(6), DataTypes.BYTES(),
                DataTypes.BIGINT());

        GenericRowData out = new LakeRowConverter(flinkType, paimonType).convert(row);
        assertEquals(5L, out.getLong(0));
        assertEquals("e5", out.getString(1).toString());
        assertEquals(new BigDecimal("1.25"), out.getDecimal(2, 10, 2).toBigDecimal());
        assertEquals(micros, out.getTimestamp(3, 6).toLocalDateTime());
        assertArrayEquals(new byte[] {1, 2}, out.getBinary(4));
        assertTrue(out.isNullAt(5));
    }

    @Test
    void nestedValuesBecomeFlinkArraysMapsAndRows() {
        org.apache.paimon.data.GenericMap map = new org.apache.paimon.data.GenericMap(
                java.util.Map.of(BinaryString.fromString("k"), new org.apache.paimon.data.GenericArray(new int[] {1, 2})));
        GenericRow nested = GenericRow.of(Timestamp.fromLocalDateTime(LocalDateTime.of(2026, 1, 1, 0, 0)),
                new org.apache.paimon.data.GenericArray(new Object[] {BinaryString.fromString("a"), null}));
        GenericRow row = GenericRow.of(map, nested, null);
        RowType flinkType = flink(
                org.fluss.py.flink.types.FlussTypes.toFlink("MAP<STRING NOT NULL, ARRAY<INT>>"),
                org.fluss.py.flink.types.FlussTypes.toFlink("ROW<t TIMESTAMP(6), s ARRAY<STRING>>"),
                org.fluss.py.flink.types.FlussTypes.toFlink("ARRAY<INT>"));
        org.apache.paimon.types.RowType paimonType = org.apache.paimon.types.RowType.of(
                DataTypes.MAP(DataTypes.STRING().notNull(), DataTypes.ARRAY(DataTypes.INT())),
                DataTypes.ROW(DataTypes.FIELD(0, "t", DataTypes.TIMESTAMP(6)),
                        DataTypes.FIELD(1, "s", DataTypes.ARRAY(DataTypes.STRING()))),
                DataTypes.ARRAY(DataTypes.INT()));

        GenericRowData out = new LakeRowConverter(flinkType, paimonType).convert(row);
        org.apache.flink.table.data.MapData m = out.getMap(0);
        assertEquals(1, m.size());
        assertEquals("k", m.keyArray().getString(0).toString());
        assertEquals(2, m.valueArray().getArray(0).getInt(1));
        org.apache.flink.table.data.RowData r = out.getRow(1, 2);
        assertEquals(LocalDateTime.of(2026, 1, 1, 0, 0), r.getTimestamp(0, 6).toLocalDateTime());
        assertEquals("a", r.getArray(1).getString(0).toString());
        assertTrue(r.getArray(1).isNullAt(1));
        assertTrue(out.isNullAt(2));
    }
}
