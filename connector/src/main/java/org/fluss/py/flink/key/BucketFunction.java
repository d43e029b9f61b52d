package org.fluss.py.flink.key;

/**
 * The bucket function of {@code fluss/key/bucketing.py} (spec in {@code docs/keys-and-buckets.md}):
 * {@code (murmur3_x86_32(key bytes, seed 0) & 0x7fffffff) % numBuckets}.
 */
public final class BucketFunction {
    private BucketFunction() {}

    public static int bucket(byte[] key, int numBuckets) {
        return (MurmurHash3.hash32(key) & 0x7fffffff) % numBuckets;
    }
}
