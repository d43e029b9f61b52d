package org.fluss.py.flink.record;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericMapData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.MapData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.types.FlussTypes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * ARRAY, MAP and ROW columns in log batches: the Python vector ({@code tests/record/test_nested_java_vector.py})
 * decodes to the rows Python wrote, and the writer's batches read back the same, at every compression.
 */
class NestedBatchTest {
    private static final String[] NAMES = {"id", "tags", "attrs", "p", "m2"};
    private static final String[] TYPES = {"INT NOT NULL", "ARRAY<STRING>", "MAP<STRING, INT>",
            "ROW<a INT, b ARRAY<DOUBLE NOT NULL>>", "MAP<INT, ROW<x STRING, ts TIMESTAMP(3)>>"};

    private final BufferAllocator allocator = new RootAllocator();

    @AfterEach
    void close() {
        allocator.close();
    }

    static RowType rowType() {
        List<RowType.RowField> fields = new ArrayList<>();
        for (int i = 0; i < NAMES.length; i++) {
            fields.add(new RowType.RowField(NAMES[i], FlussTypes.toFlink(TYPES[i])));
        }
        return new RowType(fields);
    }

    private static StringData s(String v) {
        return StringData.fromString(v);
    }

    /** The rows of the Python vector, as Flink internal data. */
    static List<RowData> rows() {
        Map<Object, Object> attrs = new LinkedHashMap<>();
        attrs.put(s("k"), 1);
        attrs.put(s("z"), null);
        Map<Object, Object> m2 = new HashMap<>();
        m2.put(3, GenericRowData.of(s("y"), null));
        GenericRowData r1 = GenericRowData.of(1, new GenericArrayData(new Object[] {s("a"), null, s("ccc")}),
                new GenericMapData(attrs), GenericRowData.of(7, new GenericArrayData(new double[] {1.5, -2.0})),
                new GenericMapData(m2));
        GenericRowData r2 = GenericRowData.of(2, null, null, null, null);
        Map<Object, Object> m3 = new HashMap<>();
        m3.put(4, null);
        GenericRowData r3 = GenericRowData.of(3, new GenericArrayData(new Object[0]), new GenericMapData(new HashMap<>()),
                GenericRowData.of(null, new GenericArrayData(new double[0])), new GenericMapData(m3));
        return List.of(r1, r2, r3);
    }

    private static void assertSameRows(List<RowData> expected, List<RowData> actual) {
        assertEquals(expected.size(), actual.size());
        for (int r = 0; r < expected.size(); r++) {
            RowData e = expected.get(r);
            RowData a = actual.get(r);
            assertEquals(e.getInt(0), a.getInt(0));
            for (int c = 1; c < NAMES.length; c++) {
                assertEquals(e.isNullAt(c), a.isNullAt(c), "row " + r + " column " + NAMES[c]);
            }
            if (e.isNullAt(1)) {
                continue;
            }
            ArrayData tags = a.getArray(1);
            assertEquals(e.getArray(1).size(), tags.size());
            for (int i = 0; i < tags.size(); i++) {
                assertEquals(e.getArray(1).isNullAt(i), tags.isNullAt(i));
                if (!tags.isNullAt(i)) {
                    assertEquals(e.getArray(1).getString(i), tags.getString(i));
                }
            }
            MapData attrs = a.getMap(2);
            assertEquals(e.getMap(2).size(), attrs.size());
            for (int i = 0; i < attrs.size(); i++) {
                assertEquals(((GenericMapData) e.getMap(2)).get(attrs.keyArray().getString(i)),
                        attrs.valueArray().isNullAt(i) ? null : attrs.valueArray().getInt(i));
            }
            RowData p = a.getRow(3, 2);
            assertEquals(e.getRow(3, 2).isNullAt(0), p.isNullAt(0));
            if (!p.isNullAt(0)) {
                assertEquals(e.getRow(3, 2).getInt(0), p.getInt(0));
            }
            assertEquals(e.getRow(3, 2).getArray(1).size(), p.getArray(1).size());
            for (int i = 0; i < p.getArray(1).size(); i++) {
                assertEquals(e.getRow(3, 2).getArray(1).getDouble(i), p.getArray(1).getDouble(i));
            }
            MapData m2 = a.getMap(4);
            assertEquals(1, m2.size());
            Object expectedValue = ((GenericMapData) e.getMap(4)).get(m2.keyArray().getInt(0));
            if (expectedValue == null) {
                assertTrue(m2.valueArray().isNullAt(0));
            } else {
                RowData v = m2.valueArray().getRow(0, 2);
                assertEquals(((RowData) expectedValue).getString(0), v.getString(0));
                assertTrue(v.isNullAt(1));
            }
        }
    }

    @Test
    void decodesNestedColumnsWrittenByPython() throws Exception {
        byte[] buf = Files.readAllBytes(Paths.get("src/test/resources/python-nested-batch.bin"));
        LogBatch.View b = LogBatch.parse(buf).get(0);
        assertTrue(b.isValid());
        assertTrue(b.arrowBody());
        try (ArrowBatchReader reader = new ArrowBatchReader(rowType(), allocator)) {
            assertSameRows(rows(), reader.read(b, 0));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {LogBatch.COMPRESSION_NONE, LogBatch.COMPRESSION_ZSTD, LogBatch.COMPRESSION_LZ4_FRAME})
    void writesNestedColumnsThatReadBackTheSame(int compression) {
        byte[] batch;
        try (ArrowBatchWriter writer = new ArrowBatchWriter(rowType(), allocator, compression, 3)) {
            for (int round = 0; round < 2; round++) { // a second batch from the same writer (vectors reused)
                for (RowData row : rows()) {
                    writer.write(row);
                }
                batch = writer.finish(3, -1L, -1);
                try (ArrowBatchReader reader = new ArrowBatchReader(rowType(), allocator)) {
                    assertSameRows(rows(), reader.read(LogBatch.parse(batch).get(0), 0));
                }
            }
        }
    }

    @Test
    void aNullMapKeyIsRefusedNamingThePath() {
        Map<Object, Object> bad = new HashMap<>();
        bad.put(null, 1);
        GenericRowData row = GenericRowData.of(9, null, new GenericMapData(bad), null, null);
        try (ArrowBatchWriter writer = new ArrowBatchWriter(rowType(), allocator, LogBatch.COMPRESSION_NONE, 3)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> writer.write(row));
            assertTrue(e.getMessage().contains("attrs{key #0}"), e.getMessage());
        }
    }

    @Test
    void aRowBodyIsNotReadAsArrow() {
        byte[] ipc = new byte[16];
        byte[] indexed = LogBatch.build(ipc, 1, 1, 0, -1, -1);
        indexed[5] |= 0x10; // INDEXED body format
        LogBatch.View v = LogBatch.parse(indexed).get(0);
        assertEquals("INDEXED", v.bodyFormat());
        try (ArrowBatchReader reader = new ArrowBatchReader(rowType(), allocator)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> reader.read(v, 0));
            assertTrue(e.getMessage().contains("as_arrow"), e.getMessage());
        }
    }
}
