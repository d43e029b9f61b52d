package org.fluss.py.flink.source;

import org.fluss.py.flink.client.TableBucket;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Splits with and without a lake part survive checkpoints; version-1 state is still read. */
class FlussSplitSerializerTest {
    private static final TableBucket BUCKET = new TableBucket(7L, 3L, 2);

    @Test
    void aSplitWithALakePartRoundTrips() throws IOException {
        FlussSplit split = new FlussSplit(BUCKET, "EU", 40L, 90L, List.of(new byte[] {1, 2, 3}, new byte[0]), 11L);
        FlussSplit back = FlussSplitSerializer.INSTANCE.deserialize(FlussSplitSerializer.VERSION,
                FlussSplitSerializer.INSTANCE.serialize(split));
        assertEquals(BUCKET, back.bucket);
        assertEquals("EU", back.partitionName);
        assertEquals(40L, back.startingOffset);
        assertEquals(90L, back.stoppingOffset);
        assertEquals(2, back.lakeSplits.size());
        assertArrayEquals(new byte[] {1, 2, 3}, back.lakeSplits.get(0));
        assertEquals(11L, back.lakeRowsEmitted);
    }

    @Test
    void versionOneSplitsAndEnumeratorStateAreRead() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeLong(7L);
        out.writeLong(-1L);
        out.writeInt(0);
        out.writeBoolean(false);
        out.writeLong(5L);
        out.writeLong(FlussSplit.NO_STOPPING_OFFSET);
        byte[] v1 = bytes.toByteArray();
        FlussSplit split = FlussSplitSerializer.INSTANCE.deserialize(1, v1);
        assertFalse(split.hasLake());
        assertEquals(5L, split.startingOffset);
        assertFalse(split.isBounded());

        ByteArrayOutputStream state = new ByteArrayOutputStream();
        DataOutputStream s = new DataOutputStream(state);
        s.writeInt(0);
        s.writeInt(1);
        s.write(v1);
        FlussEnumState restored = new FlussEnumState.Serializer().deserialize(1, state.toByteArray());
        assertEquals(1, restored.pending.size());
        assertEquals(5L, restored.pending.get(0).startingOffset);
    }

    @Test
    void enumeratorStateKeepsPendingLakeSplits() throws IOException {
        Set<TableBucket> discovered = new HashSet<>(Set.of(BUCKET));
        FlussSplit pending = new FlussSplit(BUCKET, null, 4L, 4L, List.of(new byte[] {9}), 0L);
        FlussEnumState.Serializer serializer = new FlussEnumState.Serializer();
        FlussEnumState back = serializer.deserialize(serializer.getVersion(),
                serializer.serialize(new FlussEnumState(discovered, List.of(pending))));
        assertEquals(discovered, back.discovered);
        assertTrue(back.pending.get(0).hasLake());
    }

    @Test
    void theStateLeavesTheLakePartOnceItIsDone() {
        FlussSplit split = new FlussSplit(BUCKET, null, 100L, FlussSplit.NO_STOPPING_OFFSET,
                List.of(new byte[] {1}), 0L);
        FlussSplitState state = new FlussSplitState(split);
        state.lakeRowsEmitted = 3; // a checkpoint in the lake part: skip 3 rows after a restore
        FlussSplit mid = state.toSplit();
        assertTrue(mid.hasLake());
        assertEquals(3L, mid.lakeRowsEmitted);
        assertEquals(100L, mid.startingOffset);

        state.lakeRowsEmitted = FlussRecord.LAKE_DONE; // the last lake row, then two log records
        state.nextOffset = 102L;
        FlussSplit after = state.toSplit();
        assertFalse(after.hasLake());
        assertNull(after.lakeSplits);
        assertEquals(102L, after.startingOffset);
    }
}
