package org.fluss.py.flink.key;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampType;

import java.io.ByteArrayOutputStream;
import java.io.Serializable;
import java.math.BigInteger;
import java.util.List;

/**
 * The key encoding of {@code fluss/key/encoding.py} (the spec; also {@code docs/keys-and-buckets.md}) over
 * Flink {@link RowData}: one self-delimiting field per key column, {@code 00} for null, else {@code 01}
 * followed by the order-preserving value bytes. Checked against {@code docs/key-test-vectors.json}.
 */
public final class KeyEncoder implements Serializable {
    private static final long serialVersionUID = 1L;

    private final int[] positions;
    private final LogicalType[] types;

    /**
     * @param rowType types of the row the key is read from
     * @param keyPositions positions of the key columns in that row, in key order
     */
    public KeyEncoder(List<LogicalType> rowType, int[] keyPositions) {
        this.positions = keyPositions.clone();
        this.types = new LogicalType[keyPositions.length];
        for (int i = 0; i < keyPositions.length; i++) {
            types[i] = rowType.get(keyPositions[i]);
        }
    }

    public byte[] encode(RowData row) {
        Out out = new Out();
        for (int i = 0; i < positions.length; i++) {
            int pos = positions[i];
            if (row.isNullAt(pos)) {
                out.write(0);
                continue;
            }
            out.write(1);
            writeValue(out, row, pos, types[i]);
        }
        return out.toByteArray();
    }

    private static void writeValue(Out out, RowData row, int pos, LogicalType type) {
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                out.write(row.getBoolean(pos) ? 1 : 0);
                break;
            case TINYINT:
                out.write((row.getByte(pos) & 0xff) ^ 0x80);
                break;
            case SMALLINT:
                out.writeBigEndian(row.getShort(pos) ^ 0x8000, 2);
                break;
            case INTEGER:
            case DATE:
                out.writeBigEndian((row.getInt(pos) ^ 0x80000000L) & 0xffffffffL, 4);
                break;
            case BIGINT:
                out.writeBigEndian(row.getLong(pos) ^ Long.MIN_VALUE, 8);
                break;
            case FLOAT: {
                float f = row.getFloat(pos);
                if (f == 0.0f) {
                    f = 0.0f; // -0.0 -> +0.0
                }
                int b = Float.floatToIntBits(f); // canonical NaN
                b = b < 0 ? ~b : b | 0x80000000;
                out.writeBigEndian(b & 0xffffffffL, 4);
                break;
            }
            case DOUBLE: {
                double d = row.getDouble(pos);
                if (d == 0.0d) {
                    d = 0.0d;
                }
                long b = Double.doubleToLongBits(d);
                b = b < 0 ? ~b : b | Long.MIN_VALUE;
                out.writeBigEndian(b, 8);
                break;
            }
            case DECIMAL: {
                DecimalType dt = (DecimalType) type;
                DecimalData dec = row.getDecimal(pos, dt.getPrecision(), dt.getScale());
                if (dt.getPrecision() <= 18) {
                    out.writeBigEndian(dec.toUnscaledLong() ^ Long.MIN_VALUE, 8);
                } else {
                    BigInteger v = dec.toBigDecimal().unscaledValue();
                    byte[] b = v.toByteArray(); // big-endian two's complement, minimal length
                    byte[] fixed = new byte[16];
                    byte fill = (byte) (v.signum() < 0 ? 0xff : 0);
                    int pad = 16 - b.length;
                    for (int i = 0; i < 16; i++) {
                        fixed[i] = i < pad ? fill : b[i - pad];
                    }
                    fixed[0] ^= (byte) 0x80;
                    out.write(fixed, 0, 16);
                }
                break;
            }
            case TIME_WITHOUT_TIME_ZONE: {
                long nanos = row.getInt(pos) * 1_000_000L;
                out.writeBigEndian(floorTo(nanos, 9 - ((TimeType) type).getPrecision()) ^ Long.MIN_VALUE, 8);
                break;
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                int p = ((TimestampType) type).getPrecision();
                out.writeBigEndian(timestampInUnit(row.getTimestamp(pos, p), p) ^ Long.MIN_VALUE, 8);
                break;
            }
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                int p = ((LocalZonedTimestampType) type).getPrecision();
                out.writeBigEndian(timestampInUnit(row.getTimestamp(pos, p), p) ^ Long.MIN_VALUE, 8);
                break;
            }
            case BINARY:
                byte[] fixed = row.getBinary(pos);
                out.write(fixed, 0, fixed.length);
                break;
            case CHAR:
            case VARCHAR:
                writeEscaped(out, row.getString(pos).toBytes());
                break;
            case VARBINARY:
                writeEscaped(out, row.getBinary(pos));
                break;
            default:
                throw new IllegalArgumentException("Type " + type + " cannot be a key column");
        }
    }

    /** The unit digits of the Arrow unit used for a TIMESTAMP(p): 0 (s), 3 (ms), 6 (us) or 9 (ns). */
    public static int unitDigits(int precision) {
        if (precision == 0) {
            return 0;
        }
        return precision <= 3 ? 3 : precision <= 6 ? 6 : 9;
    }

    /** A timestamp as an integer in the Arrow unit of precision p, floored to precision p. */
    public static long timestampInUnit(TimestampData ts, int precision) {
        int u = unitDigits(precision);
        long millis = ts.getMillisecond();
        long nanoOfMilli = ts.getNanoOfMillisecond();
        long v;
        if (u == 0) {
            v = Math.floorDiv(millis, 1000L);
        } else {
            long scale = u == 3 ? 1 : u == 6 ? 1_000 : 1_000_000;
            v = millis * scale + nanoOfMilli / (1_000_000 / scale);
        }
        return floorTo(v, u - precision);
    }

    private static long floorTo(long v, int digits) {
        if (digits <= 0) {
            return v;
        }
        long m = 1;
        for (int i = 0; i < digits; i++) {
            m *= 10;
        }
        return Math.floorDiv(v, m) * m;
    }

    private static void writeEscaped(Out out, byte[] bytes) {
        for (byte b : bytes) {
            out.write(b & 0xff);
            if (b == 0) {
                out.write(0xff);
            }
        }
        out.write(0);
        out.write(1);
    }

    private static final class Out extends ByteArrayOutputStream {
        Out() {
            super(32);
        }

        void writeBigEndian(long v, int bytes) {
            for (int i = bytes - 1; i >= 0; i--) {
                write((int) (v >>> (8 * i)) & 0xff);
            }
        }
    }
}
