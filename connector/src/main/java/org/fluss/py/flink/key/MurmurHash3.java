package org.fluss.py.flink.key;

/** MurmurHash3 x86_32 (Austin Appleby's reference, seed given), as used by the bucket function. */
public final class MurmurHash3 {
    private static final int C1 = 0xcc9e2d51;
    private static final int C2 = 0x1b873593;

    private MurmurHash3() {}

    public static int hash32(byte[] data, int offset, int length, int seed) {
        int h1 = seed;
        int end = offset + (length & ~3);
        for (int i = offset; i < end; i += 4) {
            int k1 = (data[i] & 0xff) | (data[i + 1] & 0xff) << 8 | (data[i + 2] & 0xff) << 16 | data[i + 3] << 24;
            k1 *= C1;
            k1 = Integer.rotateLeft(k1, 15);
            k1 *= C2;
            h1 ^= k1;
            h1 = Integer.rotateLeft(h1, 13);
            h1 = h1 * 5 + 0xe6546b64;
        }
        int k1 = 0;
        switch (length & 3) {
            case 3:
                k1 ^= (data[end + 2] & 0xff) << 16;
                // fall through
            case 2:
                k1 ^= (data[end + 1] & 0xff) << 8;
                // fall through
            case 1:
                k1 ^= data[end] & 0xff;
                k1 *= C1;
                k1 = Integer.rotateLeft(k1, 15);
                k1 *= C2;
                h1 ^= k1;
                break;
            default:
        }
        h1 ^= length;
        h1 ^= h1 >>> 16;
        h1 *= 0x85ebca6b;
        h1 ^= h1 >>> 13;
        h1 *= 0xc2b2ae35;
        h1 ^= h1 >>> 16;
        return h1;
    }

    public static int hash32(byte[] data) {
        return hash32(data, 0, data.length, 0);
    }
}
