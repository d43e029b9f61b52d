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
}
