package org.fluss.py.flink.record;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.columnar.ColumnarRowData;
import org.apache.flink.table.data.columnar.vector.VectorizedColumnBatch;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.types.FlussTypes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The columnar decoding of a batch gives the same values as the row-by-row one, for every flat type and nulls. */
class ColumnarBatchesTest {
    private final BufferAllocator allocator = new RootAllocator();

    @AfterEach
    void close() {
        allocator.close();
    }

    private static RowType type(String... columns) {
        List<RowType.RowField> fields = new ArrayList<>();
        for (int i = 0; i < columns.length; i++) {
            fields.add(new RowType.RowField("c" + i, FlussTypes.toFlink(columns[i])));
        }
        return new RowType(fields);
    }

    /** Every field of the columnar rows equals the generic row's (read through the same field getters). */
    private static void assertSameRows(RowType type, List<RowData> expected, VectorizedColumnBatch batch, int first) {
        assertEquals(expected.size(), batch.getNumRows() - first);
        for (int r = 0; r < expected.size(); r++) {
            RowData e = expected.get(r);
            RowData a = new ColumnarRowData(batch, first + r);
            for (int c = 0; c < type.getFieldCount(); c++) {
                RowData.FieldGetter g = RowData.createFieldGetter(type.getTypeAt(c), c);
                Object ev = g.getFieldOrNull(e);
                Object av = g.getFieldOrNull(a);
                String where = "row " + r + " column " + type.getFieldNames().get(c) + " " + type.getTypeAt(c);
                assertEquals(e.isNullAt(c), a.isNullAt(c), where);
                if (ev instanceof byte[]) {
                    assertArrayEquals((byte[]) ev, (byte[]) av, where);
                } else {
                    assertEquals(ev, av, where);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"zstd", "lz4", "none"})
    void batchesOfThePythonClientDecodeTheSameAsRows(String compression) throws Exception {
        byte[] buf = Files.readAllBytes(Paths.get("src/test/resources/python-batch-" + compression + ".bin"));
        LogBatch.View b = LogBatch.parse(buf).get(0);
        RowType type = LogBatchTest.rowType();
        try (ArrowBatchReader reader = new ArrowBatchReader(type, allocator)) {
            assertTrue(reader.columnar());
            VectorizedColumnBatch batch = reader.readColumnar(b);
            assertSameRows(type, LogBatchTest.expectedRows(), batch, 0);
            assertSameRows(type, reader.read(b, 1), batch, 1);
        }
    }

    @Test
    void everyFlatTypeWithNullsRoundTrips() {
        RowType type = type("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING",
                "CHAR(3)", "BYTES", "BINARY(2)", "DECIMAL(5, 2)", "DECIMAL(30, 4)", "DATE", "TIME", "TIMESTAMP(6)",
                "TIMESTAMP_LTZ(3)");
        List<RowData> rows = new ArrayList<>();
        for (int i = 0; i < 5000; i++) {
            GenericRowData row = new GenericRowData(type.getFieldCount());
            for (int c = 0; c < type.getFieldCount(); c++) {
                if ((i + c) % 7 == 0) {
                    continue; // null
                }
                row.setField(c, value(c, i));
            }
            rows.add(row);
        }
        byte[] bytes;
        try (ArrowBatchWriter writer = new ArrowBatchWriter(type, allocator, LogBatch.COMPRESSION_ZSTD, 3, 1024)) {
            rows.forEach(writer::write);
            bytes = writer.finish(1, -1L, -1);
        }
        LogBatch.View v = LogBatch.parse(bytes).get(0);
        try (ArrowBatchReader reader = new ArrowBatchReader(type, allocator)) {
            VectorizedColumnBatch batch = reader.readColumnar(v);
            List<RowData> generic = reader.read(v, 0);
            assertSameRows(type, generic, batch, 0);
            assertSameRows(type, rows, batch, 0);
            assertTrue(new ColumnarRowData(batch, 0).isNullAt(0));
            assertFalse(new ColumnarRowData(batch, 1).isNullAt(0));
        }
    }

    private static Object value(int column, int i) {
        switch (column) {
            case 0: return i % 2 == 0;
            case 1: return (byte) i;
            case 2: return (short) (i * 3);
            case 3: return i * 100_003;
            case 4: return (long) i * 1_000_000_007L;
            case 5: return i / 3.0f;
            case 6: return -i / 7.0d;
            case 7: return StringData.fromString(i % 11 == 0 ? "" : "s" + i + (i % 5 == 0 ? "日本" : ""));
            case 8: return StringData.fromString(String.format("%03d", i % 1000));
            case 9: return new byte[] {(byte) i, (byte) (i >> 8), 7};
            case 10: return new byte[] {(byte) i, (byte) (i >> 8)};
            case 11: return org.apache.flink.table.data.DecimalData.fromUnscaledLong(i - 2500, 5, 2);
            case 12: return org.apache.flink.table.data.DecimalData.fromBigDecimal(
                    new java.math.BigDecimal("123456789012345678901234.5678").add(java.math.BigDecimal.valueOf(i)),
                    30, 4);
            case 13: return i - 2000;
            case 14: return (i * 1000) % 86_400_000;
            case 15: return TimestampData.fromEpochMillis(1_700_000_000_000L + i * 1001L, (i % 1000) * 1000);
            default: return TimestampData.fromEpochMillis(1_700_000_000_000L - i * 997L);
        }
    }

    @Test
    void nestedTypesAreLeftToTheRowReader() {
        try (ArrowBatchReader reader = new ArrowBatchReader(type("INT", "ARRAY<INT>"), allocator)) {
            assertFalse(reader.columnar());
        }
    }
}
