package org.fluss.py.flink.key;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.TimestampType;

import java.io.Serializable;
import java.util.List;

/**
 * Paimon's bucket key over Flink {@link RowData}: the bucket-key columns as a Paimon {@code BinaryRow} (row kind
 * INSERT), the bytes Paimon's {@code FixedBucketRowKeyExtractor} hashes. The spec is {@code fluss/key/paimon_row.py}
 * (and {@code docs/keys-and-buckets.md}); {@code docs/paimon-bucket-test-vectors.json} pins it and the JUnit test
 * checks it against Paimon's own Java classes. Written here (no Paimon classes at runtime) so that writing to a
 * table of a Paimon lake cluster needs only this jar.
 */
public final class PaimonKeyEncoder implements Serializable {
    private static final long serialVersionUID = 1L;

    /** MurmurHash3 seed of Paimon's {@code MurmurHashUtils.hashBytesByWords}. */
    public static final int HASH_SEED = 42;

    private static final int HEADER_BITS = 8;
    private static final int MAX_INLINE_BYTES = 7;

    private final int[] positions;
    private final LogicalType[] types;
    private final int headerBytes;
    private final int fixedBytes;

    /**
     * @param rowType types of the row the key is read from
     * @param keyPositions positions of the bucket-key columns in that row, in key order
     */
    public PaimonKeyEncoder(List<LogicalType> rowType, int[] keyPositions) {
        this.positions = keyPositions.clone();
        this.types = new LogicalType[keyPositions.length];
        for (int i = 0; i < keyPositions.length; i++) {
            types[i] = rowType.get(keyPositions[i]);
        }
        this.headerBytes = ((positions.length + 63 + HEADER_BITS) / 64) * 8;
        this.fixedBytes = headerBytes + 8 * positions.length;
    }

    /** The BinaryRow of the row's bucket key. */
    public byte[] encode(RowData row) {
        byte[][] pieces = new byte[positions.length][];
        long[] slots = new long[positions.length];
        int size = fixedBytes;
        for (int i = 0; i < positions.length; i++) {
            int pos = positions[i];
            LogicalType type = types[i];
            boolean isNull = row.isNullAt(pos);
            switch (type.getTypeRoot()) {
                case BOOLEAN:
                    slots[i] = isNull ? 0 : row.getBoolean(pos) ? 1 : 0;
                    break;
                case TINYINT:
                    slots[i] = isNull ? 0 : row.getByte(pos) & 0xffL;
                    break;
                case SMALLINT:
                    slots[i] = isNull ? 0 : row.getShort(pos) & 0xffffL;
                    break;
                case INTEGER:
                case DATE:
                case TIME_WITHOUT_TIME_ZONE: // milliseconds of the day, as Paimon's TIME
                    slots[i] = isNull ? 0 : row.getInt(pos) & 0xffffffffL;
                    break;
                case BIGINT:
                    slots[i] = isNull ? 0 : row.getLong(pos);
                    break;
                case FLOAT:
                    slots[i] = isNull ? 0 : Float.floatToRawIntBits(row.getFloat(pos)) & 0xffffffffL;
                    break;
                case DOUBLE:
                    slots[i] = isNull ? 0 : Double.doubleToRawLongBits(row.getDouble(pos));
                    break;
                case DECIMAL: {
                    DecimalType dt = (DecimalType) type;
                    if (dt.getPrecision() <= 18) {
                        slots[i] = isNull ? 0 : row.getDecimal(pos, dt.getPrecision(), dt.getScale()).toUnscaledLong();
                    } else { // 16 bytes in the var part, also for a NULL (as Paimon's writers do)
                        byte[] piece = new byte[16];
                        int length = 0;
                        if (!isNull) {
                            DecimalData d = row.getDecimal(pos, dt.getPrecision(), dt.getScale());
                            byte[] bytes = d.toUnscaledBytes(); // BigInteger.toByteArray()
                            System.arraycopy(bytes, 0, piece, 0, bytes.length);
                            length = bytes.length;
                        }
                        pieces[i] = piece;
                        slots[i] = ((long) size << 32) | length;
                        size += 16;
                    }
                    break;
                }
                case TIMESTAMP_WITHOUT_TIME_ZONE:
                case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                    int p = type instanceof TimestampType ? ((TimestampType) type).getPrecision()
                            : ((LocalZonedTimestampType) type).getPrecision();
                    long millis = 0;
                    long nanos = 0;
                    if (!isNull) { // the value as the Arrow data holds it: in its unit, floored to precision p
                        TimestampData ts = row.getTimestamp(pos, p);
                        long v = KeyEncoder.timestampInUnit(ts, p);
                        int u = KeyEncoder.unitDigits(p);
                        if (u <= 3) {
                            millis = u == 0 ? v * 1000 : v;
                        } else {
                            long perMilli = u == 6 ? 1_000 : 1_000_000;
                            millis = Math.floorDiv(v, perMilli);
                            nanos = Math.floorMod(v, perMilli) * (u == 6 ? 1_000 : 1);
                        }
                    }
                    if (p <= 3) {
                        slots[i] = millis;
                    } else { // 8 bytes of millis in the var part (also for a NULL), nanos in the slot
                        byte[] piece = new byte[8];
                        putLong(piece, 0, millis);
                        pieces[i] = piece;
                        slots[i] = ((long) size << 32) | nanos;
                        size += 8;
                    }
                    break;
                }
                case CHAR:
                case VARCHAR:
                case BINARY:
                case VARBINARY: {
                    if (isNull) {
                        break;
                    }
                    LogicalTypeRoot root = type.getTypeRoot();
                    byte[] bytes = root == LogicalTypeRoot.CHAR || root == LogicalTypeRoot.VARCHAR
                            ? row.getString(pos).toBytes() : row.getBinary(pos);
                    if (bytes.length <= MAX_INLINE_BYTES) {
                        long slot = (0x80L | bytes.length) << 56;
                        for (int b = 0; b < bytes.length; b++) {
                            slot |= (bytes[b] & 0xffL) << (8 * b);
                        }
                        slots[i] = slot;
                    } else {
                        int padded = (bytes.length + 7) & ~7;
                        byte[] piece = new byte[padded];
                        System.arraycopy(bytes, 0, piece, 0, bytes.length);
                        pieces[i] = piece;
                        slots[i] = ((long) size << 32) | bytes.length;
                        size += padded;
                    }
                    break;
                }
                default:
                    throw new IllegalArgumentException("Type " + type + " cannot be a Paimon bucket-key column");
            }
        }
        byte[] out = new byte[size];
        int cursor = fixedBytes;
        for (int i = 0; i < positions.length; i++) {
            if (row.isNullAt(positions[i])) {
                out[(i + HEADER_BITS) / 8] |= (byte) (1 << ((i + HEADER_BITS) % 8));
            }
            putLong(out, headerBytes + 8 * i, slots[i]);
            if (pieces[i] != null) {
                System.arraycopy(pieces[i], 0, out, cursor, pieces[i].length);
                cursor += pieces[i].length;
            }
        }
        return out;
    }

    /** Paimon's {@code BinaryRow.hashCode()} of an encoded row. */
    public static int hash(byte[] binaryRow) {
        return MurmurHash3.hash32(binaryRow, 0, binaryRow.length, HASH_SEED);
    }

    /** Paimon's default bucket of an encoded row: {@code Math.abs(hash % numBuckets)}. */
    public static int bucket(byte[] binaryRow, int numBuckets) {
        return Math.abs(hash(binaryRow) % numBuckets);
    }

    private static void putLong(byte[] out, int at, long v) {
        for (int b = 0; b < 8; b++) {
            out[at + b] = (byte) (v >>> (8 * b));
        }
    }
}
