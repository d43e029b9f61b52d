package org.fluss.py.flink.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import org.fluss.py.flink.key.BucketFunction;
import org.fluss.py.rpc.PartitionInfoPb;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

/** A partition is routed by its own bucket count (ALTER TABLE SET bucket.num changes later partitions only). */
class PartitionBucketCountTest {
    private static PartitionInfoPb partition(int bucketCount) {
        return PartitionInfoPb.newBuilder().setPartitionId(7).setPartitionName("d1").setBucketCount(bucketCount)
                .build();
    }

    @Test
    void thePartitionsOwnCountWinsOverTheTables() {
        assertEquals(2, FlussClient.bucketCount(partition(2), 4));
        assertEquals(8, FlussClient.bucketCount(partition(8), 4));
    }

    @Test
    void aServerThatDoesNotSayLeavesTheTablesCount() {
        assertEquals(4, FlussClient.bucketCount(partition(0), 4));
        assertEquals(4, FlussClient.bucketCount(PartitionInfoPb.newBuilder().setPartitionId(7).build(), 4));
    }

    @Test
    void aKeyLandsInDifferentBucketsUnderTheTwoCounts() { // why routing by the table's count would be wrong
        int differing = 0;
        for (int i = 0; i < 100; i++) {
            byte[] key = ("key-" + i).getBytes(StandardCharsets.UTF_8);
            int ofPartition = BucketFunction.bucket(key, FlussClient.bucketCount(partition(2), 4));
            int ofTable = BucketFunction.bucket(key, 4);
            assertEquals(ofTable % 2, ofPartition); // murmur & 0x7fffffff mod 2 divides mod 4
            differing += ofTable != ofPartition ? 1 : 0;
        }
        assertNotEquals(0, differing);
    }
}
