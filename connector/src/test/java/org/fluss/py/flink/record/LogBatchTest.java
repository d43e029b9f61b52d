package org.fluss.py.flink.record;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.types.FlussTypes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LogBatchTest {
    private static final String[] NAMES = {"id", "name", "amount", "ts", "ltz", "d", "b", "bin", "f"};
    private static final String[] TYPES = {"INT NOT NULL", "STRING", "DECIMAL(10, 2)", "TIMESTAMP(3)",
            "TIMESTAMP_LTZ(6)", "DATE", "BYTES", "BINARY(2)", "DOUBLE"};

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

    /** The rows of src/test/resources/python-batch-*.bin (written by fluss.record.log_batch.build_batch). */
    static List<RowData> expectedRows() {
        GenericRowData r1 = GenericRowData.of(1, StringData.fromString("alice"),
                DecimalData.fromBigDecimal(new BigDecimal("12.34"), 10, 2),
                TimestampData.fromLocalDateTime(LocalDateTime.parse("2024-01-01T12:34:56.789")),
                TimestampData.fromInstant(Instant.parse("2024-01-01T00:00:00.123456Z")),
                (int) LocalDate.parse("2024-06-30").toEpochDay(), new byte[] {0, 1}, "ab".getBytes(), 1.5d);
        GenericRowData r2 = GenericRowData.of(2, null, null, null, null, null, null, null, null);
        GenericRowData r3 = GenericRowData.of(3, StringData.fromString("日本"),
                DecimalData.fromBigDecimal(new BigDecimal("-0.01"), 10, 2),
                TimestampData.fromLocalDateTime(LocalDateTime.parse("1969-12-31T23:59:59.999")),
                TimestampData.fromInstant(Instant.parse("1970-01-01T00:00:00Z")), 0, new byte[0],
                new byte[] {0, (byte) 0xff}, -2.25d);
        return List.of(r1, r2, r3);
    }

    private static void assertRowsEqual(List<RowData> expected, List<RowData> actual) {
        assertEquals(expected.size(), actual.size());
        for (int r = 0; r < expected.size(); r++) {
            GenericRowData e = (GenericRowData) expected.get(r);
            GenericRowData a = (GenericRowData) actual.get(r);
            for (int c = 0; c < e.getArity(); c++) {
                Object ev = e.getField(c);
                Object av = a.getField(c);
                if (ev instanceof byte[]) {
                    assertArrayEquals((byte[]) ev, (byte[]) av, "row " + r + " column " + NAMES[c]);
                } else {
                    assertEquals(ev, av, "row " + r + " column " + NAMES[c]);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"zstd", "lz4", "none"})
    void decodesBatchesWrittenByThePythonClient(String compression) throws Exception {
        byte[] buf = Files.readAllBytes(Paths.get("src/test/resources/python-batch-" + compression + ".bin"));
        List<LogBatch.View> batches = LogBatch.parse(buf);
        assertEquals(1, batches.size());
        LogBatch.View b = batches.get(0);
        assertTrue(b.isValid());
        assertTrue(b.appendOnly());
        assertEquals(3, b.recordCount);
        assertEquals(7, b.schemaId);
        assertEquals(buf.length, b.length);
        assertEquals(0, b.length % 8);
        try (ArrowBatchReader reader = new ArrowBatchReader(rowType(), allocator)) {
            assertRowsEqual(expectedRows(), reader.read(b, 0));
            assertEquals(2, reader.read(b, 1).size());
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {LogBatch.COMPRESSION_NONE, LogBatch.COMPRESSION_ZSTD, LogBatch.COMPRESSION_LZ4_FRAME})
    void encodeDecodeRoundTripWithValidCrc(int compression) {
        byte[] batch;
        try (ArrowBatchWriter writer = new ArrowBatchWriter(rowType(), allocator, compression, 3)) {
            for (RowData row : expectedRows()) {
                writer.write(row);
            }
            assertEquals(3, writer.rowCount());
            batch = writer.finish(5, 42L, 9);
            assertEquals(0, writer.rowCount());
        }
        ByteBuffer h = ByteBuffer.wrap(batch).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(batch.length, h.getInt(16));
        assertEquals(0, batch.length % 8);
        LogBatch.View v = LogBatch.parse(batch).get(0);
        assertEquals(compression, v.compression());
        assertEquals(3, v.recordCount);
        assertEquals(5, v.schemaId);
        assertEquals(42L, v.writerId);
        assertEquals(9, v.batchSequence);
        assertEquals(0L, v.baseOffset);
        assertNull(v.changeTypes());
        assertEquals(v.crc, LogBatch.crc32c(batch, 4, batch.length - 4));
        try (ArrowBatchReader reader = new ArrowBatchReader(rowType(), allocator)) {
            assertRowsEqual(expectedRows(), reader.read(v, 0));
        }
        batch[batch.length - 1] ^= 1;
        assertFalse(LogBatch.parse(batch).get(0).isValid(), "a flipped byte must break the CRC");
    }

    /** A batch under minCompressedBytes goes uncompressed, a larger one with the table's codec; both decode. */
    @ParameterizedTest
    @ValueSource(ints = {LogBatch.COMPRESSION_ZSTD, LogBatch.COMPRESSION_LZ4_FRAME})
    void smallBatchesAreWrittenUncompressed(int compression) {
        List<RowData> rows = expectedRows();
        try (ArrowBatchWriter writer = new ArrowBatchWriter(rowType(), allocator, compression, 3, 0, 16 * 1024);
             ArrowBatchReader reader = new ArrowBatchReader(rowType(), allocator)) {
            for (RowData row : rows) {
                writer.write(row);
            }
            LogBatch.View small = LogBatch.parse(writer.finish(1, -1L, -1)).get(0);
            assertEquals(LogBatch.COMPRESSION_NONE, small.compression());
            assertRowsEqual(rows, reader.read(small, 0));

            List<RowData> many = new ArrayList<>();
            for (int i = 0; i < 2000; i++) {
                many.add(rows.get(i % 2));
            }
            for (RowData row : many) {
                writer.write(row);
            }
            LogBatch.View large = LogBatch.parse(writer.finish(1, -1L, -1)).get(0);
            assertEquals(compression, large.compression());
            assertEquals(2000, large.recordCount);
            assertRowsEqual(many, reader.read(large, 0));
        }
    }

    /**
     * One writer, several batches: the vectors are reset (not reallocated) between batches, so each batch must
     * hold exactly its own rows: no value, null bit or string offset left over from the previous batch. Rows come
     * in binary form (what the sink gets from Flink's network stack: strings copied from the row's segment) and
     * as generic rows.
     */
    @ParameterizedTest
    @ValueSource(ints = {LogBatch.COMPRESSION_NONE, LogBatch.COMPRESSION_ZSTD})
    void reusedWriterKeepsBatchesApart(int compression) {
        RowType type = rowType();
        org.apache.flink.table.runtime.typeutils.RowDataSerializer serializer =
                new org.apache.flink.table.runtime.typeutils.RowDataSerializer(type);
        List<RowData> rows = expectedRows();
        List<List<RowData>> batches = List.of(rows, List.of(rows.get(1)), List.of(rows.get(2), rows.get(0)),
                List.of(), List.of(rows.get(0), rows.get(0), rows.get(1)));
        try (ArrowBatchWriter writer = new ArrowBatchWriter(type, allocator, compression, 3, 2);
             ArrowBatchReader reader = new ArrowBatchReader(type, allocator)) {
            for (int round = 0; round < 2; round++) {
                for (List<RowData> batch : batches) {
                    for (RowData row : batch) {
                        writer.write(round == 0 ? serializer.toBinaryRow(row).copy() : row);
                    }
                    byte[] bytes = writer.finish(1, 7L, 0);
                    assertEquals(0, writer.rowCount());
                    LogBatch.View v = LogBatch.parse(bytes).get(0);
                    assertTrue(v.isValid());
                    assertEquals(batch.size(), v.recordCount);
                    if (!batch.isEmpty()) {
                        assertRowsEqual(batch, reader.read(v, 0));
                    }
                }
            }
        }
    }

    /**
     * Numbers are stored straight into the vectors' memory while a batch fits their allocated capacity and through
     * setSafe past it: batches below, at and past the capacity (the vectors grow, then are reused), with nulls, in
     * binary and generic form, must read back exactly.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 16})
    void numbersWrittenDirectlyAndPastTheCapacityReadBack(int initialRows) {
        String[] names = {"l", "i", "s", "t", "f", "d", "day", "name"};
        String[] types = {"BIGINT", "INT", "SMALLINT", "TINYINT", "FLOAT", "DOUBLE", "DATE", "STRING"};
        List<RowType.RowField> fields = new ArrayList<>();
        for (int i = 0; i < names.length; i++) {
            fields.add(new RowType.RowField(names[i], FlussTypes.toFlink(types[i])));
        }
        RowType type = new RowType(fields);
        org.apache.flink.table.runtime.typeutils.RowDataSerializer serializer =
                new org.apache.flink.table.runtime.typeutils.RowDataSerializer(type);
        try (ArrowBatchWriter writer = new ArrowBatchWriter(type, allocator, LogBatch.COMPRESSION_ZSTD, 3,
                initialRows);
             ArrowBatchReader reader = new ArrowBatchReader(type, allocator)) {
            int start = 0;
            for (int size : new int[] {initialRows, 5000, 3, 4100, 1}) {
                List<RowData> batch = new ArrayList<>();
                for (int r = start; r < start + size; r++) {
                    GenericRowData row = r % 7 == 3
                            ? GenericRowData.of(null, null, null, null, null, null, null, null)
                            : GenericRowData.of((long) r * 1_000_003L - (1L << 40), -r, (short) (r * 31),
                                    (byte) r, r * 0.5f - 7f, r * -1.25d, r % 7 == 5 ? null : r - 20_000,
                                    StringData.fromString("s" + r));
                    batch.add(row);
                    writer.write(r % 2 == 0 ? serializer.toBinaryRow(row).copy() : row);
                }
                start += size;
                byte[] bytes = writer.finish(1, 7L, 0);
                LogBatch.View v = LogBatch.parse(bytes).get(0);
                assertTrue(v.isValid());
                assertEquals(size, v.recordCount);
                if (size > 0) {
                    List<RowData> read = reader.read(v, 0);
                    assertEquals(size, read.size());
                    for (int r = 0; r < size; r++) {
                        GenericRowData e = (GenericRowData) batch.get(r);
                        RowData a = read.get(r);
                        for (int c = 0; c < names.length; c++) {
                            Object got = a.isNullAt(c) ? null : RowData.createFieldGetter(type.getTypeAt(c), c)
                                    .getFieldOrNull(a);
                            assertEquals(e.getField(c), got, "batch of " + size + ", row " + r + ", " + names[c]);
                        }
                    }
                }
            }
        }
    }

    @Test
    void concatenatedBatchesAndChangeTypesParse() {
        byte[] ipc = new byte[16];
        byte[] a = LogBatch.build(ipc, new byte[] {1, 2, 3}, 3, 1, 0, -1, -1, 100L, 4, 1234L);
        byte[] b = LogBatch.build(ipc, 1, 1, 0, -1, -1);
        byte[] both = new byte[a.length + b.length + 10]; // + a torn tail
        System.arraycopy(a, 0, both, 0, a.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        List<LogBatch.View> views = LogBatch.parse(both);
        assertEquals(2, views.size());
        LogBatch.View first = views.get(0);
        assertArrayEquals(new byte[] {1, 2, 3}, first.changeTypes());
        assertEquals(100L, first.baseOffset);
        assertEquals(102L, first.lastOffset());
        assertEquals(4, first.leaderEpoch);
        assertEquals(1234L, first.commitTimestamp);
        assertEquals(LogBatch.HEADER_SIZE + 8, first.ipcPosition() - first.position);
        assertTrue(first.isValid() && views.get(1).isValid());
        assertEquals(a.length, views.get(1).position);
    }

    @Test
    void restampedSequenceKeepsTheBatchValid() {
        byte[] batch = LogBatch.build(new byte[16], 2, 1, 0, 77L, 5);
        LogBatch.restampSequence(batch, 0);
        LogBatch.View v = LogBatch.parse(batch).get(0);
        assertEquals(0, v.batchSequence);
        assertEquals(77L, v.writerId);
        assertTrue(v.isValid());
    }

    @Test
    void crc32cIsCastagnoli() {
        // RFC 3720 check value: CRC32C("123456789") = 0xE3069283
        assertEquals(0xE3069283L, LogBatch.crc32c("123456789".getBytes(), 0, 9));
    }

    @Test
    void unusedTypeIsReported() {
        LogicalType t = FlussTypes.toFlink("INT");
        assertEquals("INT", FlussTypes.toFluss(t));
    }
}
