package org.fluss.py.flink.record;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** KV batches (PutKv): rows written with change types make a batch with a change-type vector, not APPEND_ONLY. */
class KvBatchTest {
    private static final RowType TYPE = RowType.of(new IntType(false), new VarCharType(VarCharType.MAX_LENGTH));

    @Test
    void rowsWithChangeTypesBecomeAKvBatch() {
        try (BufferAllocator allocator = new RootAllocator();
             ArrowBatchWriter w = new ArrowBatchWriter(TYPE, allocator, LogBatch.COMPRESSION_ZSTD, 3)) {
            w.write(GenericRowData.of(1, StringData.fromString("a")), (byte) 3);
            w.write(GenericRowData.of(2, null), (byte) 4);
            w.write(GenericRowData.of(3, StringData.fromString("c")), (byte) 3);
            byte[] bytes = w.finish(7, 42L, 0);
            List<LogBatch.View> views = LogBatch.parse(bytes);
            assertEquals(1, views.size());
            LogBatch.View v = views.get(0);
            assertTrue(v.isValid());
            assertFalse(v.appendOnly());
            assertEquals(3, v.recordCount);
            assertEquals(42L, v.writerId);
            assertArrayEquals(new byte[] {3, 4, 3}, v.changeTypes());
            try (ArrowBatchReader r = new ArrowBatchReader(TYPE, allocator)) {
                List<RowData> rows = r.read(v, 0);
                assertEquals(2, rows.get(1).getInt(0));
                assertTrue(rows.get(1).isNullAt(1));
                assertEquals("c", rows.get(2).getString(1).toString());
            }
            // the next batch of the same writer is append-only again unless change types are given
            w.write(GenericRowData.of(4, StringData.fromString("d")));
            assertTrue(LogBatch.parse(w.finish(7, 42L, 1)).get(0).appendOnly());
        }
    }

    @Test
    void appendOnlyAndKvRowsDoNotMixInOneBatch() {
        try (BufferAllocator allocator = new RootAllocator();
             ArrowBatchWriter w = new ArrowBatchWriter(TYPE, allocator, LogBatch.COMPRESSION_NONE, 3)) {
            w.write(GenericRowData.of(1, null));
            assertThrows(IllegalStateException.class, () -> w.write(GenericRowData.of(2, null), (byte) 3));
            w.finish(1, -1L, -1);
        }
    }
}
