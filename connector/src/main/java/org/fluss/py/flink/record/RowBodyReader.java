package org.fluss.py.flink.record;

import org.apache.arrow.vector.types.TimeUnit;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericMapData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.BinaryType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampType;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Decodes the row bodies of INDEXED and COMPACTED log batches ({@code table.log.format}) into Flink rows, as
 * {@link ArrowBatchReader} decodes ARROW bodies: the same Flink values for the same column types. The spec is the
 * Python codecs: {@code fluss/record/log_batch.py} (a row body is {@code record_count} u32 row lengths, then the
 * rows, zero padding to 8 bytes), {@code fluss/record/indexed_rows.py} (schema id, null bitmap, fixed slots, u32
 * length-prefixed variable fields), {@code fluss/record/compacted_rows.py} (schema id, null bitmap, the non-null
 * values one after the other: zig-zag varints, varint length-prefixed bytes) and {@code
 * fluss/record/nested_codec.py} (ARRAY, MAP and ROW values, the same in both layouts).
 *
 * <p>A reader is made for the columns a body holds (schema id {@code k}: the first {@code n_k} columns of the
 * table) and the row it returns ({@code target[c]}: where body column {@code c} goes, -1 to skip it; the other
 * output fields stay null). Column layouts are computed once; decoding is a loop over the columns with a switch
 * on a precomputed kind, reading little-endian values straight from the batch's bytes. Bytes that do not fit the
 * layout (a field running past its row or the batch, a row longer than its fields) fail with an
 * {@link IllegalStateException} naming the batch.
 */
public final class RowBodyReader {
    private static final VarHandle I16 = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle I32 = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle I64 = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final int SCHEMA_ID_BYTES = 2;
    private static final int INDEXED = 1;
    private static final int COMPACTED = 2;

    // value kinds
    private static final int BOOLEAN = 0;
    private static final int TINYINT = 1;
    private static final int SMALLINT = 2;
    private static final int INT = 3; // INT, DATE
    private static final int BIGINT = 4;
    private static final int FLOAT = 5;
    private static final int DOUBLE = 6;
    private static final int STRING = 7; // CHAR, STRING
    private static final int BYTES = 8;
    private static final int BINARY = 9; // BINARY(n)
    private static final int DECIMAL_LONG = 10; // p <= 18: the unscaled value in an int64
    private static final int DECIMAL_BIG = 11; // p > 18: int128
    private static final int TIME32 = 12; // TIME(p <= 3): int32 seconds or millis
    private static final int TIME64 = 13; // TIME(p > 3): int64 micros or nanos
    private static final int TIMESTAMP = 14; // TIMESTAMP, TIMESTAMP_LTZ: int64 in the unit of the precision
    private static final int ARRAY = 15;
    private static final int MAP = 16;
    private static final int ROW = 17;

    /** One type's decoding plan. */
    private static final class Kind {
        final int kind;
        final int width; // fixed slot bytes (INDEXED layout and nested values); -1: variable
        final int precision;
        final int scale;
        final TimeUnit unit;
        final Kind[] children; // ARRAY: element; MAP: key, value; ROW: fields
        final int bitmapBytes; // ROW: of its fields
        final int[] slotOffset; // ROW: offset of each fixed field's slot after the bitmap (-1: variable field)
        final int fixedEnd; // ROW: bitmap + fixed slots

        Kind(LogicalType t) {
            int p = 0;
            int s = 0;
            TimeUnit u = null;
            Kind[] kids = null;
            int w;
            int k;
            switch (t.getTypeRoot()) {
                case BOOLEAN:
                    k = BOOLEAN;
                    w = 1;
                    break;
                case TINYINT:
                    k = TINYINT;
                    w = 1;
                    break;
                case SMALLINT:
                    k = SMALLINT;
                    w = 2;
                    break;
                case INTEGER:
                case DATE:
                    k = INT;
                    w = 4;
                    break;
                case BIGINT:
                    k = BIGINT;
                    w = 8;
                    break;
                case FLOAT:
                    k = FLOAT;
                    w = 4;
                    break;
                case DOUBLE:
                    k = DOUBLE;
                    w = 8;
                    break;
                case CHAR:
                case VARCHAR:
                    k = STRING;
                    w = -1;
                    break;
                case VARBINARY:
                    k = BYTES;
                    w = -1;
                    break;
                case BINARY:
                    k = BINARY;
                    w = ((BinaryType) t).getLength();
                    break;
                case DECIMAL: {
                    DecimalType d = (DecimalType) t;
                    p = d.getPrecision();
                    s = d.getScale();
                    k = p <= 18 ? DECIMAL_LONG : DECIMAL_BIG;
                    w = p <= 18 ? 8 : 16;
                    break;
                }
                case TIME_WITHOUT_TIME_ZONE:
                    u = ArrowSchemas.unit(((TimeType) t).getPrecision());
                    k = u == TimeUnit.SECOND || u == TimeUnit.MILLISECOND ? TIME32 : TIME64;
                    w = k == TIME32 ? 4 : 8;
                    break;
                case TIMESTAMP_WITHOUT_TIME_ZONE:
                    u = ArrowSchemas.unit(((TimestampType) t).getPrecision());
                    k = TIMESTAMP;
                    w = 8;
                    break;
                case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                    u = ArrowSchemas.unit(((LocalZonedTimestampType) t).getPrecision());
                    k = TIMESTAMP;
                    w = 8;
                    break;
                case ARRAY:
                    k = ARRAY;
                    w = -1;
                    kids = new Kind[] {new Kind(((ArrayType) t).getElementType())};
                    break;
                case MAP:
                    k = MAP;
                    w = -1;
                    kids = new Kind[] {new Kind(((MapType) t).getKeyType()), new Kind(((MapType) t).getValueType())};
                    break;
                case ROW: {
                    k = ROW;
                    w = -1;
                    List<LogicalType> fields = ((RowType) t).getChildren();
                    kids = new Kind[fields.size()];
                    for (int i = 0; i < kids.length; i++) {
                        kids[i] = new Kind(fields.get(i));
                    }
                    break;
                }
                default:
                    throw new IllegalArgumentException("Type " + t + " cannot be read from a row-format log");
            }
            this.kind = k;
            this.width = w;
            this.precision = p;
            this.scale = s;
            this.unit = u;
            this.children = kids;
            if (k == ROW) {
                this.bitmapBytes = (kids.length + 7) / 8;
                this.slotOffset = new int[kids.length];
                int at = bitmapBytes;
                for (int i = 0; i < kids.length; i++) {
                    slotOffset[i] = kids[i].width >= 0 ? at : -1;
                    at += Math.max(0, kids[i].width);
                }
                this.fixedEnd = at;
            } else {
                this.bitmapBytes = 0;
                this.slotOffset = null;
                this.fixedEnd = 0;
            }
        }
    }

    private final Kind row; // the body's columns, as a ROW
    private final int[] target;
    private final int arity;
    private int cursor; // COMPACTED: the read position

    /**
     * @param bodyType the columns a body holds, in order
     * @param target   for each body column, its position in the returned rows (-1: dropped)
     * @param arity    fields of the returned rows
     */
    public RowBodyReader(RowType bodyType, int[] target, int arity) {
        if (target.length != bodyType.getFieldCount()) {
            throw new IllegalArgumentException("target has " + target.length + " entries for " + bodyType);
        }
        this.row = new Kind(bodyType);
        this.target = target.clone();
        this.arity = arity;
    }

    /** A reader returning every column of {@code bodyType} in order. */
    public RowBodyReader(RowType bodyType) {
        this(bodyType, identity(bodyType.getFieldCount()), bodyType.getFieldCount());
    }

    private static int[] identity(int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = i;
        }
        return out;
    }

    /** The rows of a row-format batch from row {@code firstRow} on. */
    public List<RowData> read(LogBatch.View batch, int firstRow) {
        int format = (batch.attributes & LogBatch.BODY_FORMAT_MASK) >> 4;
        if (format != INDEXED && format != COMPACTED) {
            throw new IllegalStateException("Log batch at offset " + batch.baseOffset + " has a " + batch.bodyFormat()
                    + " body, not a row body (INDEXED or COMPACTED)");
        }
        byte[] b = batch.buf;
        int n = batch.recordCount;
        int end = batch.position + batch.length;
        int lengths = batch.ipcPosition();
        try {
            if (batch.compression() != LogBatch.COMPRESSION_NONE) {
                throw corrupt("a row body cannot be compressed");
            }
            if (n < 0 || (long) lengths + 4L * n > end) {
                throw corrupt("a body of " + (end - lengths) + " bytes cannot hold " + n + " row lengths");
            }
            List<RowData> out = new ArrayList<>(Math.max(0, n - firstRow));
            int pos = lengths + 4 * n;
            for (int r = 0; r < n; r++) {
                int len = (int) I32.get(b, lengths + 4 * r);
                if (len < 0 || len > end - pos) {
                    throw corrupt("row " + r + " of " + Integer.toUnsignedString(len) + " bytes runs past the batch");
                }
                if (r >= firstRow) {
                    GenericRowData rowData = new GenericRowData(arity);
                    if (format == INDEXED) {
                        readIndexed(row, b, pos + SCHEMA_ID_BYTES, pos + len, rowData, target);
                    } else {
                        readCompacted(b, pos, pos + len, rowData);
                    }
                    out.add(rowData);
                }
                pos += len;
            }
            return out;
        } catch (IllegalStateException | IndexOutOfBoundsException | NegativeArraySizeException e) {
            throw new IllegalStateException("Corrupt " + batch.bodyFormat() + " log batch at offset " + batch.baseOffset
                    + " (schema id " + batch.schemaId + "): " + e.getMessage(), e);
        }
    }

    private static IllegalStateException corrupt(String what) {
        return new IllegalStateException(what);
    }

    // ============================================================== INDEXED rows and nested ROW values

    /**
     * A row in the indexed layout at {@code pos} (its null bitmap; the schema id is before it at the top level):
     * bitmap, fixed slots in field order, then {@code u32 length || bytes} for each variable field in order.
     */
    private static void readIndexed(Kind t, byte[] b, int pos, int end, GenericRowData out, int[] target) {
        Kind[] fields = t.children;
        int varPos = pos + t.fixedEnd;
        if (varPos > end) {
            throw corrupt("a row of " + (end - pos) + " bytes is shorter than its " + t.fixedEnd + "-byte fixed part");
        }
        for (int i = 0; i < fields.length; i++) {
            Kind f = fields[i];
            boolean isNull = (b[pos + (i >> 3)] >> (i & 7) & 1) != 0;
            int to = target == null ? i : target[i];
            if (f.width >= 0) {
                if (!isNull && to >= 0) {
                    out.setField(to, fixed(f, b, pos + t.slotOffset[i]));
                }
                continue;
            }
            int len = (int) I32.get(b, varPos);
            varPos += 4;
            if (len < 0 || len > end - varPos) {
                throw corrupt("a field of " + Integer.toUnsignedString(len) + " bytes runs past its row");
            }
            if (!isNull && to >= 0) {
                out.setField(to, variable(f, b, varPos, len));
            }
            varPos += len;
        }
    }

    /** A fixed-width value in its slot (the INDEXED layout; nested values). */
    private static Object fixed(Kind f, byte[] b, int at) {
        switch (f.kind) {
            case BOOLEAN:
                return b[at] != 0;
            case TINYINT:
                return b[at];
            case SMALLINT:
                return (short) I16.get(b, at);
            case INT:
                return (int) I32.get(b, at);
            case BIGINT:
                return (long) I64.get(b, at);
            case FLOAT:
                return Float.intBitsToFloat((int) I32.get(b, at));
            case DOUBLE:
                return Double.longBitsToDouble((long) I64.get(b, at));
            case BINARY:
                return Arrays.copyOfRange(b, at, at + f.width);
            case DECIMAL_LONG:
                return DecimalData.fromUnscaledLong((long) I64.get(b, at), f.precision, f.scale);
            case DECIMAL_BIG:
                return bigDecimal(f, b, at);
            case TIME32:
                return time32(f, (int) I32.get(b, at));
            case TIME64:
                return time64(f, (long) I64.get(b, at));
            case TIMESTAMP:
                return ArrowBatchReader.timestamp((long) I64.get(b, at), f.unit);
            default:
                throw new IllegalStateException("kind " + f.kind + " has no fixed slot");
        }
    }

    /** A variable-width value: a string, bytes, or a nested value's encoding. */
    private static Object variable(Kind f, byte[] b, int at, int len) {
        switch (f.kind) {
            case STRING:
                return StringData.fromBytes(Arrays.copyOfRange(b, at, at + len));
            case BYTES:
                return Arrays.copyOfRange(b, at, at + len);
            case ARRAY:
                return array(f, b, at, at + len);
            case MAP:
                return map(f, b, at, at + len);
            case ROW: {
                GenericRowData r = new GenericRowData(f.children.length);
                readIndexed(f, b, at, at + len, r, null);
                return r;
            }
            default:
                throw new IllegalStateException("kind " + f.kind + " is not variable");
        }
    }

    private static Object bigDecimal(Kind f, byte[] b, int at) {
        byte[] bigEndian = new byte[16];
        for (int i = 0; i < 16; i++) {
            bigEndian[i] = b[at + 15 - i];
        }
        return DecimalData.fromBigDecimal(new BigDecimal(new BigInteger(bigEndian), f.scale), f.precision, f.scale);
    }

    private static Object time32(Kind f, int v) {
        return f.unit == TimeUnit.SECOND ? v * 1000 : v;
    }

    private static Object time64(Kind f, long v) {
        return (int) (f.unit == TimeUnit.MICROSECOND ? Math.floorDiv(v, 1000L) : Math.floorDiv(v, 1_000_000L));
    }

    // ============================================================== nested values (nested_codec.py)

    private static int count(byte[] b, int at, int end) {
        if (at + 4 > end) {
            throw corrupt("a nested value of " + (end - at) + " bytes has no element count");
        }
        int n = (int) I32.get(b, at);
        if (n < 0 || n > end - at) { // every element takes a bit at least: a hostile count must not size arrays
            throw corrupt("a nested value of " + (end - at) + " bytes claims " + Integer.toUnsignedString(n)
                    + " elements");
        }
        return n;
    }

    /** {@code u32 count || null bitmap of the elements || section(elements)}. */
    private static GenericArrayData array(Kind t, byte[] b, int pos, int end) {
        int n = count(b, pos, end);
        int bitmap = pos + 4;
        Object[] values = new Object[n];
        section(t.children[0], b, bitmap + (n + 7) / 8, end, n, bitmap, values);
        return new GenericArrayData(values);
    }

    /** {@code u32 count || null bitmap of the values || section(keys) || section(values)}. */
    private static GenericMapData map(Kind t, byte[] b, int pos, int end) {
        int n = count(b, pos, end);
        int bitmap = pos + 4;
        Object[] keys = new Object[n];
        Object[] values = new Object[n];
        int valuesAt = section(t.children[0], b, bitmap + (n + 7) / 8, end, n, -1, keys);
        section(t.children[1], b, valuesAt, end, n, bitmap, values);
        Map<Object, Object> m = new LinkedHashMap<>(Math.max(4, n * 2));
        for (int i = 0; i < n; i++) {
            m.put(keys[i], values[i]);
        }
        return new GenericMapData(m);
    }

    /**
     * Reads {@code n} items of one section at {@code at} into {@code out} (null where the bitmap at
     * {@code bitmap} says so; -1: none is null); returns the position after the section.
     */
    private static int section(Kind t, byte[] b, int at, int end, int n, int bitmap, Object[] out) {
        if (t.width >= 0) {
            if ((long) at + (long) n * t.width > end) {
                throw corrupt("a nested section of " + n + " items of " + t.width + " bytes runs past its value");
            }
            for (int i = 0; i < n; i++) {
                if (bitmap < 0 || (b[bitmap + (i >> 3)] >> (i & 7) & 1) == 0) {
                    out[i] = fixed(t, b, at + i * t.width);
                }
            }
            return at + n * t.width;
        }
        if ((long) at + 4L * n > end) {
            throw corrupt("a nested section of " + n + " lengths runs past its value");
        }
        int payload = at + 4 * n;
        for (int i = 0; i < n; i++) {
            int len = (int) I32.get(b, at + 4 * i);
            if (len < 0 || len > end - payload) {
                throw corrupt("a nested item of " + Integer.toUnsignedString(len) + " bytes runs past its value");
            }
            if (bitmap < 0 || (b[bitmap + (i >> 3)] >> (i & 7) & 1) == 0) {
                out[i] = variable(t, b, payload, len);
            }
            payload += len;
        }
        return payload;
    }

    // ============================================================== COMPACTED rows

    /** schema id || null bitmap || the non-null values in column order. */
    private void readCompacted(byte[] b, int pos, int end, GenericRowData out) {
        Kind[] fields = row.children;
        int bitmap = pos + SCHEMA_ID_BYTES;
        cursor = bitmap + row.bitmapBytes;
        if (cursor > end) {
            throw corrupt("a row of " + (end - pos) + " bytes is shorter than its header");
        }
        for (int i = 0; i < fields.length; i++) {
            if ((b[bitmap + (i >> 3)] >> (i & 7) & 1) != 0) {
                continue; // a null takes no bytes
            }
            int to = target[i];
            Object v = compacted(fields[i], b, end, to >= 0);
            if (to >= 0) {
                out.setField(to, v);
            }
        }
        if (cursor != end) {
            throw corrupt("a row of " + (end - pos) + " bytes does not match its columns (" + (cursor - pos)
                    + " bytes decoded)");
        }
    }

    /** The value at {@link #cursor} (moved past it); null when {@code wanted} is false (the value is skipped). */
    private Object compacted(Kind f, byte[] b, int end, boolean wanted) {
        int at = cursor;
        switch (f.kind) {
            case BOOLEAN:
            case TINYINT:
            case SMALLINT:
            case FLOAT:
            case DOUBLE:
            case BINARY:
            case DECIMAL_BIG: {
                int w = f.width;
                if (w > end - at) {
                    throw corrupt("a " + w + "-byte value runs past its row");
                }
                cursor = at + w;
                return wanted ? fixed(f, b, at) : null;
            }
            case INT: {
                int v = (int) zigzag(b, end);
                return wanted ? (Object) v : null;
            }
            case TIME32: {
                int v = (int) zigzag(b, end);
                return wanted ? time32(f, v) : null;
            }
            case BIGINT: {
                long v = zigzag(b, end);
                return wanted ? (Object) v : null;
            }
            case TIME64: {
                long v = zigzag(b, end);
                return wanted ? time64(f, v) : null;
            }
            case TIMESTAMP: {
                long v = zigzag(b, end);
                return wanted ? ArrowBatchReader.timestamp(v, f.unit) : null;
            }
            case DECIMAL_LONG: {
                long v = zigzag(b, end);
                return wanted ? DecimalData.fromUnscaledLong(v, f.precision, f.scale) : null;
            }
            default: { // STRING, BYTES, nested: varint length || bytes
                long len = varint(b, end);
                int from = cursor;
                if (len > end - from) {
                    throw corrupt("a value of " + len + " bytes runs past its row");
                }
                cursor = from + (int) len;
                return wanted ? variable(f, b, from, (int) len) : null;
            }
        }
    }

    /** The LEB128 varint at {@link #cursor} (moved past it). */
    private long varint(byte[] b, int end) {
        int at = cursor;
        long value = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            if (at >= end) {
                throw corrupt("a varint runs past its row");
            }
            byte x = b[at++];
            value |= (long) (x & 0x7f) << shift;
            if (x >= 0) {
                cursor = at;
                return value;
            }
        }
        throw corrupt("a varint longer than 10 bytes");
    }

    private long zigzag(byte[] b, int end) {
        long u = varint(b, end);
        return (u >>> 1) ^ -(u & 1);
    }
}
