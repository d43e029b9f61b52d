package org.fluss.py.flink.record;

import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.memory.BufferAllocator;
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
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericMapData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.columnar.vector.VectorizedColumnBatch;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RowType;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Decodes the Arrow IPC message of a log batch into Flink rows. The row type is the one the batch was
 * written (or projected) with: columns are matched by position, like Flink's own Arrow reader.
 */
public final class ArrowBatchReader implements AutoCloseable {
    private final RowType rowType;
    private final BufferAllocator allocator;
    private final VectorSchemaRoot root;
    private final boolean columnar;

    public ArrowBatchReader(RowType rowType, BufferAllocator allocator) {
        this.rowType = rowType;
        this.allocator = allocator;
        this.root = VectorSchemaRoot.create(ArrowSchemas.of(rowType), allocator);
        this.columnar = ColumnarBatches.supports(rowType);
    }

    /** Whether {@link #readColumnar} can decode this reader's rows (flat column types only). */
    public boolean columnar() {
        return columnar;
    }

    /**
     * Decodes a whole batch into heap column vectors ({@link ColumnarBatches}): the rows are then
     * {@link org.apache.flink.table.data.columnar.ColumnarRowData} views, no object per field.
     */
    public VectorizedColumnBatch readColumnar(LogBatch.View batch) {
        if (!batch.arrowBody()) {
            throw new IllegalStateException("Log batch at offset " + batch.baseOffset + " has a row body ("
                    + batch.bodyFormat() + "): fetch with as_arrow to read it as Arrow");
        }
        load(batch.buf, batch.ipcPosition(), batch.ipcLength());
        return ColumnarBatches.copy(root, rowType);
    }

    /** Decodes every row of a batch, starting at row {@code firstRow}. */
    public List<RowData> read(LogBatch.View batch, int firstRow) {
        if (!batch.arrowBody()) {
            throw new IllegalStateException("Log batch at offset " + batch.baseOffset + " has a row body ("
                    + batch.bodyFormat() + "): fetch with as_arrow to read it as Arrow");
        }
        return read(batch.buf, batch.ipcPosition(), batch.ipcLength(), firstRow);
    }

    public List<RowData> read(byte[] buf, int offset, int length, int firstRow) {
        load(buf, offset, length);
        int n = root.getRowCount();
        int cols = rowType.getFieldCount();
        List<RowData> out = new ArrayList<>(Math.max(0, n - firstRow));
        for (int r = firstRow; r < n; r++) {
            GenericRowData row = new GenericRowData(cols);
            for (int c = 0; c < cols; c++) {
                FieldVector v = root.getVector(c);
                if (!v.isNull(r)) {
                    row.setField(c, get(v, rowType.getTypeAt(c), r));
                }
            }
            out.add(row);
        }
        return out;
    }

    private void load(byte[] buf, int offset, int length) {
        try (ArrowRecordBatch rb = MessageSerializer.deserializeRecordBatch(
                new ReadChannel(Channels.newChannel(new ByteArrayInputStream(buf, offset, length))), allocator)) {
            if (rb == null) {
                throw new IllegalStateException("No Arrow record batch in log batch");
            }
            new VectorLoader(root, CommonsCompressionFactory.INSTANCE).load(rb);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Object get(FieldVector v, LogicalType t, int r) {
        switch (t.getTypeRoot()) {
            case BOOLEAN:
                return ((BitVector) v).get(r) != 0;
            case TINYINT:
                return ((TinyIntVector) v).get(r);
            case SMALLINT:
                return ((SmallIntVector) v).get(r);
            case INTEGER:
                return ((IntVector) v).get(r);
            case BIGINT:
                return ((BigIntVector) v).get(r);
            case FLOAT:
                return ((Float4Vector) v).get(r);
            case DOUBLE:
                return ((Float8Vector) v).get(r);
            case CHAR:
            case VARCHAR:
                return StringData.fromBytes(((VarCharVector) v).get(r));
            case DECIMAL: {
                DecimalType d = (DecimalType) t;
                DecimalVector dv = (DecimalVector) v;
                if (d.getPrecision() <= 18) {
                    return DecimalData.fromUnscaledLong(dv.getDataBuffer().getLong((long) r * 16), d.getPrecision(),
                            d.getScale());
                }
                return DecimalData.fromBigDecimal(dv.getObject(r), d.getPrecision(), d.getScale());
            }
            case DATE:
                return ((DateDayVector) v).get(r);
            case TIME_WITHOUT_TIME_ZONE:
                if (v instanceof TimeSecVector) {
                    return ((TimeSecVector) v).get(r) * 1000;
                } else if (v instanceof TimeMilliVector) {
                    return ((TimeMilliVector) v).get(r);
                } else if (v instanceof TimeMicroVector) {
                    return (int) Math.floorDiv(((TimeMicroVector) v).get(r), 1000L);
                } else {
                    return (int) Math.floorDiv(((TimeNanoVector) v).get(r), 1_000_000L);
                }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                long raw = ((TimeStampVector) v).get(r);
                TimeUnit unit = ((ArrowType.Timestamp) v.getField().getType()).getUnit();
                return timestamp(raw, unit);
            }
            case BINARY:
                return ((FixedSizeBinaryVector) v).get(r);
            case VARBINARY:
                return ((VarBinaryVector) v).get(r);
            case ARRAY: {
                ListVector list = (ListVector) v;
                FieldVector child = list.getDataVector();
                LogicalType element = ((ArrayType) t).getElementType();
                int start = list.getElementStartIndex(r);
                Object[] values = new Object[list.getElementEndIndex(r) - start];
                for (int j = 0; j < values.length; j++) {
                    values[j] = child.isNull(start + j) ? null : get(child, element, start + j);
                }
                return new GenericArrayData(values);
            }
            case MAP: {
                MapVector map = (MapVector) v;
                StructVector entries = (StructVector) map.getDataVector();
                FieldVector keys = (FieldVector) entries.getChildByOrdinal(0);
                FieldVector items = (FieldVector) entries.getChildByOrdinal(1);
                MapType m = (MapType) t;
                Map<Object, Object> values = new LinkedHashMap<>();
                for (int j = map.getElementStartIndex(r); j < map.getElementEndIndex(r); j++) {
                    values.put(get(keys, m.getKeyType(), j), items.isNull(j) ? null : get(items, m.getValueType(), j));
                }
                return new GenericMapData(values);
            }
            case ROW: {
                StructVector struct = (StructVector) v;
                RowType rowType = (RowType) t;
                GenericRowData row = new GenericRowData(rowType.getFieldCount());
                for (int k = 0; k < rowType.getFieldCount(); k++) {
                    FieldVector field = (FieldVector) struct.getChildByOrdinal(k);
                    if (!field.isNull(r)) {
                        row.setField(k, get(field, rowType.getTypeAt(k), r));
                    }
                }
                return row;
            }
            default:
                throw new IllegalArgumentException("Type " + t + " cannot be read from Fluss");
        }
    }

    static TimestampData timestamp(long raw, TimeUnit unit) {
        switch (unit) {
            case SECOND:
                return TimestampData.fromEpochMillis(raw * 1000L);
            case MILLISECOND:
                return TimestampData.fromEpochMillis(raw);
            case MICROSECOND:
                return TimestampData.fromEpochMillis(Math.floorDiv(raw, 1000L),
                        (int) Math.floorMod(raw, 1000L) * 1000);
            default:
                return TimestampData.fromEpochMillis(Math.floorDiv(raw, 1_000_000L),
                        (int) Math.floorMod(raw, 1_000_000L));
        }
    }

    @Override
    public void close() {
        root.close();
    }
}
