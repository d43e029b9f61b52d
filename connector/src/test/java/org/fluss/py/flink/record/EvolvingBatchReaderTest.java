package org.fluss.py.flink.record;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.types.FlussTypes;
import org.fluss.py.rpc.ColumnPb;
import org.fluss.py.rpc.SchemaPb;
import org.fluss.py.rpc.TableDescriptorPb;
import org.fluss.py.rpc.TableInfoPb;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Batches of several schema ids (ALTER TABLE ADD) read as one reader's columns (fluss/record/schema_evolution.py). */
class EvolvingBatchReaderTest {
    private static final String[][] COLUMNS = {{"id", "INT NOT NULL"}, {"name", "STRING"}, {"score", "BIGINT"},
            {"tag", "STRING"}};

    private final BufferAllocator allocator = new RootAllocator();

    @AfterEach
    void close() {
        allocator.close();
    }

    /** Schema id 1: (id, name); schema id 2 adds score and tag. */
    private static TableInfoPb info() {
        SchemaPb.Builder schema = SchemaPb.newBuilder();
        for (String[] c : COLUMNS) {
            schema.addColumns(ColumnPb.newBuilder().setName(c[0]).setDataType(c[1]));
        }
        return TableInfoPb.newBuilder().setSchemaId(2).addSchemaColumnCounts(2).addSchemaColumnCounts(4)
                .setDescriptorPb(TableDescriptorPb.newBuilder().setSchema(schema)).build();
    }

    private static RowType type(int... columns) {
        List<RowType.RowField> fields = new ArrayList<>();
        for (int c : columns) {
            fields.add(new RowType.RowField(COLUMNS[c][0], FlussTypes.toFlink(COLUMNS[c][1])));
        }
        return new RowType(fields);
    }

    private LogBatch.View batch(RowType type, int schemaId, Object[]... rows) {
        try (ArrowBatchWriter w = new ArrowBatchWriter(type, allocator, LogBatch.COMPRESSION_NONE, 3)) {
            for (Object[] r : rows) {
                w.write(GenericRowData.of(r));
            }
            return LogBatch.parse(w.finish(schemaId, LogBatch.NO_WRITER_ID, LogBatch.NO_BATCH_SEQUENCE)).get(0);
        }
    }

    @Test
    void oldBatchesGetNullsAndNewerColumnsAreDropped() {
        AtomicInteger fetched = new AtomicInteger();
        LogBatch.View old = batch(type(0, 1), 1, new Object[] {1, StringData.fromString("a")});
        LogBatch.View current = batch(type(0, 1, 2, 3), 2,
                new Object[] {2, StringData.fromString("b"), 7L, StringData.fromString("t")});
        try (EvolvingBatchReader all = new EvolvingBatchReader(type(0, 1, 2, 3), null,
                () -> { fetched.incrementAndGet(); return info(); }, allocator)) {
            RowData r = all.read(old, 0).get(0);
            assertEquals(4, r.getArity());
            assertEquals(1, r.getInt(0));
            assertNull(((GenericRowData) r).getField(2));
            assertNull(((GenericRowData) r).getField(3));
            assertEquals(7L, all.read(current, 0).get(0).getLong(2));
        }
        // a reader created before the ALTER (two columns) keeps them
        try (EvolvingBatchReader before = new EvolvingBatchReader(type(0, 1), null, EvolvingBatchReaderTest::info, allocator)) {
            RowData r = before.read(current, 0).get(0);
            assertEquals(2, r.getArity());
            assertEquals("b", r.getString(1).toString());
        }
        assertEquals(1, fetched.get());  // once: every later batch of a known id decodes without asking
    }

    @Test
    void projectedBodiesOfAnOlderSchemaHoldTheProjectedColumnsTheyHave() {
        // projection [3, 0]: schema id 1 has only column 0; projection [2]: none (the server sends column 0)
        LogBatch.View some = batch(type(0), 1, new Object[] {5});
        try (EvolvingBatchReader r = new EvolvingBatchReader(type(0, 1, 2, 3), new int[] {3, 0}, EvolvingBatchReaderTest::info,
                allocator)) {
            GenericRowData row = (GenericRowData) r.read(some, 0).get(0);
            assertNull(row.getField(0));
            assertEquals(5, row.getField(1));
        }
        try (EvolvingBatchReader r = new EvolvingBatchReader(type(0, 1, 2, 3), new int[] {2}, EvolvingBatchReaderTest::info,
                allocator)) {
            GenericRowData row = (GenericRowData) r.read(some, 0).get(0);
            assertEquals(1, row.getArity());
            assertNull(row.getField(0));
        }
    }

    @Test
    void anUnknownSchemaIdFails() {
        LogBatch.View future = batch(type(0, 1), 3, new Object[] {1, StringData.fromString("a")});
        try (EvolvingBatchReader r = new EvolvingBatchReader(type(0, 1), null, EvolvingBatchReaderTest::info, allocator)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> r.read(future, 0));
            assertTrue(e.getMessage().contains("schema id 3"), e.getMessage());
        }
    }
}
