package org.fluss.py.flink.record;

import org.apache.arrow.compression.Lz4CompressionCodec;
import org.apache.arrow.compression.ZstdCompressionCodec;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.FixedSizeBinaryVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeMicroVector;
import org.apache.arrow.vector.TimeMilliVector;
import org.apache.arrow.vector.TimeNanoVector;
import org.apache.arrow.vector.TimeSecVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.compression.CompressionCodec;
import org.apache.arrow.vector.compression.NoCompressionCodec;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.MapData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.BinaryType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampType;
import org.fluss.py.flink.key.KeyEncoder;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.util.Arrays;

/**
 * Appends Flink {@link RowData} to Arrow vectors of the table's Arrow schema and serializes them as one log
 * batch ({@link LogBatch}) with Arrow IPC body compression. One writer per (partition, bucket) buffer.
 *
 * <p>The vectors and the serialization buffer live as long as the writer: {@link #finishIpc} resets the vectors
 * (their memory stays allocated for the next batch) instead of allocating a new set per batch, and strings are
 * copied from the row's memory segment straight into the vector's data buffer (no {@code byte[]} per value).
 *
 * <p>Numbers (BIGINT, INT, DATE, SMALLINT, TINYINT, FLOAT, DOUBLE) are stored straight into their vector's memory
 * while the batch fits the vectors' allocated capacity (the sink allocates them for its batch size): one store of
 * the value and one of its validity bit, instead of Arrow's {@code setSafe} with its capacity check and a bounds and
 * reference-count check per buffer access. Past that capacity, and for every other type, {@code setSafe} grows the
 * vectors as before.
 */
public final class ArrowBatchWriter implements AutoCloseable {
    private final RowType rowType;
    private final BufferAllocator allocator;
    private final int compression;
    /** Batches whose vectors hold fewer bytes go uncompressed (0: none does). */
    private final int minCompressedBytes;
    private final CompressionCodec codec;
    private final RowData.FieldGetter[] getters;
    private final LogicalType[] types;
    private final boolean[] nestedColumn;
    private final int initialRows;
    private VectorSchemaRoot root;
    private FieldVector[] vectors; // the root's, by column
    private int rows;
    /** The IPC message of the last batch (reused: its array grows to the largest batch, then stays). */
    private final IpcBuffer ipcOut = new IpcBuffer();
    /** Per column: how a non-null value is stored ({@link #GENERIC}: Arrow's {@code setSafe}; else directly). */
    private final byte[] kinds;
    private static final byte GENERIC = 0;
    private static final byte INT64 = 1;
    private static final byte INT32 = 2;
    private static final byte INT16 = 3;
    private static final byte INT8 = 4;
    private static final byte FLOAT32 = 5;
    private static final byte FLOAT64 = 6;
    /** Addresses of the directly written vectors' value and validity buffers for the current batch. */
    private final long[] valueAddress;
    private final long[] validityAddress;
    /** Rows every directly written vector holds without growing (its buffers stay where they are). */
    private int directCapacity;
    /** Change types of the buffered rows (KV batches for PutKv); null while every row is append-only. */
    private java.io.ByteArrayOutputStream changeTypes;

    public ArrowBatchWriter(RowType rowType, BufferAllocator allocator, int compression, int zstdLevel) {
        this(rowType, allocator, compression, zstdLevel, 0);
    }

    /** {@code initialRows}: rows a batch usually holds (its vectors are allocated for them up front; 0: Arrow's default). */
    public ArrowBatchWriter(RowType rowType, BufferAllocator allocator, int compression, int zstdLevel,
                            int initialRows) {
        this(rowType, allocator, compression, zstdLevel, initialRows, 0);
    }

    /**
     * {@code minCompressedBytes}: a batch whose vectors hold fewer bytes is written uncompressed whatever
     * {@code compression} says (0: every batch compressed), as the Python client's writers do
     * ({@code client.writer.compression.min-batch-size}).
     */
    public ArrowBatchWriter(RowType rowType, BufferAllocator allocator, int compression, int zstdLevel,
                            int initialRows, int minCompressedBytes) {
        this.initialRows = initialRows;
        this.minCompressedBytes = minCompressedBytes;
        this.rowType = rowType;
        this.allocator = allocator;
        this.compression = compression;
        this.codec = compression == LogBatch.COMPRESSION_ZSTD ? new ZstdCompressionCodec(zstdLevel)
                : compression == LogBatch.COMPRESSION_LZ4_FRAME ? new Lz4CompressionCodec()
                : NoCompressionCodec.INSTANCE;
        this.getters = new RowData.FieldGetter[rowType.getFieldCount()];
        for (int i = 0; i < getters.length; i++) {
            getters[i] = RowData.createFieldGetter(rowType.getTypeAt(i), i);
        }
        this.types = rowType.getChildren().toArray(new LogicalType[0]);
        this.nestedColumn = new boolean[types.length];
        for (int i = 0; i < types.length; i++) {
            nestedColumn[i] = nested(types[i]);
        }
        this.kinds = new byte[types.length];
        for (int i = 0; i < types.length; i++) {
            kinds[i] = kind(types[i]);
        }
        this.valueAddress = new long[types.length];
        this.validityAddress = new long[types.length];
        newRoot();
    }

    private static byte kind(LogicalType t) {
        switch (t.getTypeRoot()) {
            case BIGINT:
                return INT64;
            case INTEGER:
            case DATE:
                return INT32;
            case SMALLINT:
                return INT16;
            case TINYINT:
                return INT8;
            case FLOAT:
                return FLOAT32;
            case DOUBLE:
                return FLOAT64;
            default:
                return GENERIC;
        }
    }

    /** Notes where the directly written vectors' buffers are, and how many rows they hold, for a new batch. */
    private void mapBuffers() {
        int capacity = Integer.MAX_VALUE;
        for (int c = 0; c < vectors.length; c++) {
            if (kinds[c] != GENERIC) {
                BaseFixedWidthVector v = (BaseFixedWidthVector) vectors[c];
                valueAddress[c] = v.getDataBuffer().memoryAddress();
                validityAddress[c] = v.getValidityBuffer().memoryAddress();
                capacity = Math.min(capacity, v.getValueCapacity());
            }
        }
        directCapacity = capacity == Integer.MAX_VALUE ? 0 : capacity;
    }

    private void newRoot() {
        root = VectorSchemaRoot.create(ArrowSchemas.of(rowType), allocator);
        vectors = root.getFieldVectors().toArray(new FieldVector[0]);
        if (initialRows > 0) {
            for (int c = 0; c < vectors.length; c++) {
                if (!nestedColumn[c]) {
                    vectors[c].setInitialCapacity(initialRows);
                }
            }
        }
        root.allocateNew();
        rows = 0;
        mapBuffers();
    }

    public int rowCount() {
        return rows;
    }

    /** Appends a row with a change type ({@code +U}=3 upsert, {@code -D}=4 delete): the batch becomes a KV batch. */
    public void write(RowData row, byte changeType) {
        if (changeTypes == null) {
            if (rows > 0) {
                throw new IllegalStateException("Cannot mix append-only rows and rows with a change type");
            }
            changeTypes = new java.io.ByteArrayOutputStream();
        }
        changeTypes.write(changeType);
        write(row);
    }

    public void write(RowData row) {
        boolean direct = rows < directCapacity; // no setSafe has moved a directly written buffer in this batch
        for (int c = 0; c < vectors.length; c++) {
            FieldVector v = vectors[c];
            if (row.isNullAt(c)) {
                setNull(v, rows);
                continue;
            }
            byte kind = kinds[c];
            if (direct && kind != GENERIC) {
                store(kind, row, c, rows);
                continue;
            }
            LogicalType t = types[c];
            if (nestedColumn[c]) {
                setValue(v, t, getters[c].getFieldOrNull(row), rows, rowType.getFieldNames().get(c));
            } else {
                set(v, t, row, c, rows);
            }
        }
        rows++;
    }

    /** Stores a number at row {@code i} of a fixed-width vector whose buffers hold it (i < directCapacity). */
    private void store(byte kind, RowData row, int c, int i) {
        long validity = validityAddress[c] + (i >> 3);
        MemoryUtil.putByte(validity, (byte) (MemoryUtil.getByte(validity) | (1 << (i & 7))));
        long at = valueAddress[c];
        switch (kind) {
            case INT64:
                MemoryUtil.putLong(at + ((long) i << 3), row.getLong(c));
                break;
            case INT32:
                MemoryUtil.putInt(at + ((long) i << 2), row.getInt(c));
                break;
            case INT16:
                MemoryUtil.putShort(at + ((long) i << 1), row.getShort(c));
                break;
            case INT8:
                MemoryUtil.putByte(at + i, row.getByte(c));
                break;
            case FLOAT32:
                MemoryUtil.putInt(at + ((long) i << 2), Float.floatToRawIntBits(row.getFloat(c)));
                break;
            default:
                MemoryUtil.putLong(at + ((long) i << 3), Double.doubleToRawLongBits(row.getDouble(c)));
        }
    }

    private static boolean nested(LogicalType t) {
        switch (t.getTypeRoot()) {
            case ARRAY:
            case MAP:
            case ROW:
                return true;
            default:
                return false;
        }
    }

    private static void setNull(FieldVector v, int i) {
        if (v instanceof BaseFixedWidthVector) {
            ((BaseFixedWidthVector) v).setNull(i);
        } else if (v instanceof BaseVariableWidthVector) {
            ((BaseVariableWidthVector) v).setNull(i);
        } else if (v instanceof ListVector) { // MAP too
            ((ListVector) v).setNull(i);
        } else if (v instanceof StructVector) {
            ((StructVector) v).setNull(i);
        } else {
            throw new IllegalArgumentException("Cannot write a null into " + v.getField());
        }
    }

    /**
     * Writes one value given as a Flink internal object (what {@link ArrayData.ElementGetter} and
     * {@link RowData.FieldGetter} return) at index {@code i}: the path of nested values (elements, map entries,
     * ROW fields) to any depth. {@code path} names the value in errors (a null map key is refused).
     */
    private static void setValue(FieldVector v, LogicalType t, Object o, int i, String path) {
        switch (t.getTypeRoot()) {
            case BOOLEAN:
                ((BitVector) v).setSafe(i, (Boolean) o ? 1 : 0);
                break;
            case TINYINT:
                ((TinyIntVector) v).setSafe(i, (Byte) o);
                break;
            case SMALLINT:
                ((SmallIntVector) v).setSafe(i, (Short) o);
                break;
            case INTEGER:
                ((IntVector) v).setSafe(i, (Integer) o);
                break;
            case DATE:
                ((DateDayVector) v).setSafe(i, (Integer) o);
                break;
            case BIGINT:
                ((BigIntVector) v).setSafe(i, (Long) o);
                break;
            case FLOAT:
                ((Float4Vector) v).setSafe(i, (Float) o);
                break;
            case DOUBLE:
                ((Float8Vector) v).setSafe(i, (Double) o);
                break;
            case CHAR:
            case VARCHAR:
                ((VarCharVector) v).setSafe(i, ((StringData) o).toBytes());
                break;
            case DECIMAL:
                ((DecimalVector) v).setSafe(i, ((DecimalData) o).toBigDecimal());
                break;
            case TIME_WITHOUT_TIME_ZONE:
                setTime(v, (Integer) o, i);
                break;
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                ((TimeStampVector) v).setSafe(i, KeyEncoder.timestampInUnit((TimestampData) o,
                        ((TimestampType) t).getPrecision()));
                break;
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                ((TimeStampVector) v).setSafe(i, KeyEncoder.timestampInUnit((TimestampData) o,
                        ((LocalZonedTimestampType) t).getPrecision()));
                break;
            case BINARY: {
                byte[] b = (byte[]) o;
                int n = ((BinaryType) t).getLength();
                ((FixedSizeBinaryVector) v).setSafe(i, b.length == n ? b : Arrays.copyOf(b, n));
                break;
            }
            case VARBINARY:
                ((VarBinaryVector) v).setSafe(i, (byte[]) o);
                break;
            case ARRAY: {
                ListVector list = (ListVector) v;
                ArrayData array = (ArrayData) o;
                LogicalType element = ((ArrayType) t).getElementType();
                ArrayData.ElementGetter getter = ArrayData.createElementGetter(element);
                FieldVector child = list.getDataVector();
                int start = list.startNewValue(i);
                for (int j = 0; j < array.size(); j++) {
                    Object e = getter.getElementOrNull(array, j);
                    if (e == null) {
                        setNull(child, start + j);
                    } else {
                        setValue(child, element, e, start + j, path + "[" + j + "]");
                    }
                }
                list.endValue(i, array.size());
                break;
            }
            case MAP: {
                MapVector map = (MapVector) v;
                MapData data = (MapData) o;
                MapType m = (MapType) t;
                StructVector entries = (StructVector) map.getDataVector();
                FieldVector keys = (FieldVector) entries.getChildByOrdinal(0);
                FieldVector items = (FieldVector) entries.getChildByOrdinal(1);
                ArrayData.ElementGetter keyGetter = ArrayData.createElementGetter(m.getKeyType());
                ArrayData.ElementGetter valueGetter = ArrayData.createElementGetter(m.getValueType());
                ArrayData keyArray = data.keyArray();
                ArrayData valueArray = data.valueArray();
                int start = map.startNewValue(i);
                for (int j = 0; j < data.size(); j++) {
                    entries.setIndexDefined(start + j);
                    Object key = keyGetter.getElementOrNull(keyArray, j);
                    if (key == null) {
                        throw new IllegalArgumentException("Column '" + path + "{key #" + j + "}': a map key is "
                                + "null (Fluss map keys are NOT NULL)");
                    }
                    setValue(keys, m.getKeyType(), key, start + j, path + "{key #" + j + "}");
                    Object value = valueGetter.getElementOrNull(valueArray, j);
                    if (value == null) {
                        setNull(items, start + j);
                    } else {
                        setValue(items, m.getValueType(), value, start + j, path + "{value #" + j + "}");
                    }
                }
                map.endValue(i, data.size());
                break;
            }
            case ROW: {
                StructVector struct = (StructVector) v;
                RowData row = (RowData) o;
                RowType rowType = (RowType) t;
                struct.setIndexDefined(i);
                for (int k = 0; k < rowType.getFieldCount(); k++) {
                    FieldVector field = (FieldVector) struct.getChildByOrdinal(k);
                    LogicalType ft = rowType.getTypeAt(k);
                    Object value = RowData.createFieldGetter(ft, k).getFieldOrNull(row);
                    if (value == null) {
                        setNull(field, i);
                    } else {
                        setValue(field, ft, value, i, path + "." + rowType.getFieldNames().get(k));
                    }
                }
                break;
            }
            default:
                throw new IllegalArgumentException("Type " + t + " cannot be written to Fluss");
        }
    }

    private static void setTime(FieldVector v, int millis, int i) {
        if (v instanceof TimeSecVector) {
            ((TimeSecVector) v).setSafe(i, Math.floorDiv(millis, 1000));
        } else if (v instanceof TimeMilliVector) {
            ((TimeMilliVector) v).setSafe(i, millis);
        } else if (v instanceof TimeMicroVector) {
            ((TimeMicroVector) v).setSafe(i, millis * 1000L);
        } else {
            ((TimeNanoVector) v).setSafe(i, millis * 1_000_000L);
        }
    }

    private static void set(FieldVector v, LogicalType t, RowData row, int c, int i) {
        switch (t.getTypeRoot()) {
            case BOOLEAN:
                ((BitVector) v).setSafe(i, row.getBoolean(c) ? 1 : 0);
                break;
            case TINYINT:
                ((TinyIntVector) v).setSafe(i, row.getByte(c));
                break;
            case SMALLINT:
                ((SmallIntVector) v).setSafe(i, row.getShort(c));
                break;
            case INTEGER:
                ((IntVector) v).setSafe(i, row.getInt(c));
                break;
            case BIGINT:
                ((BigIntVector) v).setSafe(i, row.getLong(c));
                break;
            case FLOAT:
                ((Float4Vector) v).setSafe(i, row.getFloat(c));
                break;
            case DOUBLE:
                ((Float8Vector) v).setSafe(i, row.getDouble(c));
                break;
            case CHAR:
            case VARCHAR:
                setString((VarCharVector) v, i, row.getString(c));
                break;
            case DECIMAL: {
                DecimalType d = (DecimalType) t;
                ((DecimalVector) v).setSafe(i, row.getDecimal(c, d.getPrecision(), d.getScale()).toBigDecimal());
                break;
            }
            case DATE:
                ((DateDayVector) v).setSafe(i, row.getInt(c));
                break;
            case TIME_WITHOUT_TIME_ZONE: {
                int millis = row.getInt(c);
                if (v instanceof TimeSecVector) {
                    ((TimeSecVector) v).setSafe(i, Math.floorDiv(millis, 1000));
                } else if (v instanceof TimeMilliVector) {
                    ((TimeMilliVector) v).setSafe(i, millis);
                } else if (v instanceof TimeMicroVector) {
                    ((TimeMicroVector) v).setSafe(i, millis * 1000L);
                } else {
                    ((TimeNanoVector) v).setSafe(i, millis * 1_000_000L);
                }
                break;
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                int p = ((TimestampType) t).getPrecision();
                ((TimeStampVector) v).setSafe(i, KeyEncoder.timestampInUnit(row.getTimestamp(c, p), p));
                break;
            }
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                int p = ((LocalZonedTimestampType) t).getPrecision();
                ((TimeStampVector) v).setSafe(i, KeyEncoder.timestampInUnit(row.getTimestamp(c, p), p));
                break;
            }
            case BINARY: {
                byte[] b = row.getBinary(c);
                int n = ((BinaryType) t).getLength();
                ((FixedSizeBinaryVector) v).setSafe(i, b.length == n ? b : Arrays.copyOf(b, n));
                break;
            }
            case VARBINARY:
                ((VarBinaryVector) v).setSafe(i, row.getBinary(c));
                break;
            default:
                throw new IllegalArgumentException("Type " + t + " cannot be written to Fluss");
        }
    }

    /**
     * Sets a string: a binary string held in one heap segment (the rows Flink deserializes from the network or
     * a sort buffer) is copied from that segment without an intermediate {@code byte[]}.
     */
    private static void setString(VarCharVector v, int i, StringData s) {
        if (s instanceof BinaryStringData) {
            BinaryStringData b = (BinaryStringData) s;
            b.ensureMaterialized();
            MemorySegment[] segments = b.getSegments();
            if (segments.length == 1 && !segments[0].isOffHeap()) {
                v.setSafe(i, segments[0].getArray(), b.getOffset(), b.getSizeInBytes());
                return;
            }
        }
        v.setSafe(i, s.toBytes());
    }

    /** Serializes the buffered rows as one log batch (append-only unless rows came with change types) and starts a new buffer. */
    public byte[] finish(int schemaId, long writerId, int batchSequence) {
        int n = rows;
        byte[] types = changeTypes == null ? null : changeTypes.toByteArray();
        changeTypes = null;
        int used = bodyCompression();
        serializeIpc(used == compression ? codec : NoCompressionCodec.INSTANCE);
        // the batch is built from the serialization buffer directly (one copy of the IPC message, not two)
        return LogBatch.build(ipcOut.array(), ipcOut.size(), types, n, schemaId, used, writerId,
                batchSequence, 0L, 0, 0L);
    }

    /** Serializes the buffered rows as an Arrow IPC record-batch message and starts a new buffer. */
    public byte[] finishIpc() {
        serializeIpc(codec);
        return ipcOut.toByteArray();
    }

    /** The codec of the buffered rows' batch: none when their vectors hold fewer than minCompressedBytes. */
    private int bodyCompression() {
        if (minCompressedBytes <= 0 || compression == LogBatch.COMPRESSION_NONE) {
            return compression;
        }
        root.setRowCount(rows);
        long bytes = 0;
        for (FieldVector v : vectors) {
            bytes += v.getBufferSize();
        }
        return bytes < minCompressedBytes ? LogBatch.COMPRESSION_NONE : compression;
    }

    /** Serializes the buffered rows into {@link #ipcOut} and empties the vectors for the next batch. */
    private void serializeIpc(CompressionCodec bodyCodec) {
        try {
            root.setRowCount(rows);
            ipcOut.reset();
            try (ArrowRecordBatch batch = new VectorUnloader(root, true, bodyCodec, true).getRecordBatch()) {
                MessageSerializer.serialize(new WriteChannel(Channels.newChannel(ipcOut)), batch);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            resetRoot();
        }
    }

    /** A {@link ByteArrayOutputStream} whose array can be read in place (valid until the next write). */
    private static final class IpcBuffer extends ByteArrayOutputStream {
        IpcBuffer() {
            super(64 * 1024);
        }

        byte[] array() {
            return buf;
        }
    }

    /**
     * Empties the vectors for the next batch, keeping their memory (the unloaded batch held its own references,
     * released when it closed). A batch far larger than usual ({@code initialRows}) gives its memory back.
     */
    private void resetRoot() {
        if (initialRows > 0 && rows > 2 * initialRows) {
            root.close();
            newRoot();
            return;
        }
        for (FieldVector v : vectors) {
            v.reset();
        }
        root.setRowCount(0);
        rows = 0;
        mapBuffers();
    }

    @Override
    public void close() {
        root.close();
    }
}
