package org.fluss.py.flink.record;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.BitVectorHelper;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.FixedSizeBinaryVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeMicroVector;
import org.apache.arrow.vector.TimeMilliVector;
import org.apache.arrow.vector.TimeNanoVector;
import org.apache.arrow.vector.TimeSecVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.columnar.vector.ColumnVector;
import org.apache.flink.table.data.columnar.vector.DecimalColumnVector;
import org.apache.flink.table.data.columnar.vector.VectorizedColumnBatch;
import org.apache.flink.table.data.columnar.vector.heap.AbstractHeapVector;
import org.apache.flink.table.data.columnar.vector.heap.HeapBooleanVector;
import org.apache.flink.table.data.columnar.vector.heap.HeapByteVector;
import org.apache.flink.table.data.columnar.vector.heap.HeapBytesVector;
import org.apache.flink.table.data.columnar.vector.heap.HeapDoubleVector;
import org.apache.flink.table.data.columnar.vector.heap.HeapFloatVector;
import org.apache.flink.table.data.columnar.vector.heap.HeapIntVector;
import org.apache.flink.table.data.columnar.vector.heap.HeapLongVector;
import org.apache.flink.table.data.columnar.vector.heap.HeapShortVector;
import org.apache.flink.table.data.columnar.vector.heap.HeapTimestampVector;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

/**
 * Copies a decoded Arrow record batch into Flink's heap column vectors, column by column (bulk copies of the
 * value buffers, no per-row objects), so a source can hand out {@link
 * org.apache.flink.table.data.columnar.ColumnarRowData} views instead of building a {@code GenericRowData} with
 * boxed fields per row. The copy is on the Java heap and owned by the rows: the Arrow vectors can be reloaded with
 * the next batch while the rows are still queued for the task thread.
 *
 * <p>Flat types only ({@link #supports}); a row type with ARRAY, MAP or ROW columns is read row by row by
 * {@link ArrowBatchReader#read}.
 */
public final class ColumnarBatches {
    private ColumnarBatches() {}

    /** Whether every column of {@code type} can be copied into a columnar batch. */
    public static boolean supports(RowType type) {
        for (LogicalType t : type.getChildren()) {
            switch (t.getTypeRoot()) {
                case BOOLEAN:
                case TINYINT:
                case SMALLINT:
                case INTEGER:
                case BIGINT:
                case FLOAT:
                case DOUBLE:
                case CHAR:
                case VARCHAR:
                case BINARY:
                case VARBINARY:
                case DECIMAL:
                case DATE:
                case TIME_WITHOUT_TIME_ZONE:
                case TIMESTAMP_WITHOUT_TIME_ZONE:
                case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                    break;
                default:
                    return false;
            }
        }
        return true;
    }

    /** The rows of {@code root} (its columns are {@code type}'s, by position) as a batch of heap vectors. */
    public static VectorizedColumnBatch copy(VectorSchemaRoot root, RowType type) {
        int n = root.getRowCount();
        ColumnVector[] columns = new ColumnVector[type.getFieldCount()];
        for (int c = 0; c < columns.length; c++) {
            columns[c] = copy(root.getVector(c), type.getTypeAt(c), n);
        }
        VectorizedColumnBatch batch = new VectorizedColumnBatch(columns);
        batch.setNumRows(n);
        return batch;
    }

    private static ColumnVector copy(FieldVector v, LogicalType t, int n) {
        int cap = Math.max(1, n);
        switch (t.getTypeRoot()) {
            case BOOLEAN: {
                HeapBooleanVector out = new HeapBooleanVector(cap);
                BitVector bits = (BitVector) v;
                for (int i = 0; i < n; i++) {
                    out.vector[i] = BitVectorHelper.get(bits.getDataBuffer(), i) != 0;
                }
                return nulls(v, out, n);
            }
            case TINYINT: {
                HeapByteVector out = new HeapByteVector(cap);
                ((TinyIntVector) v).getDataBuffer().getBytes(0, out.vector, 0, n);
                return nulls(v, out, n);
            }
            case SMALLINT: {
                HeapShortVector out = new HeapShortVector(cap);
                ArrowBuf data = ((SmallIntVector) v).getDataBuffer();
                for (int i = 0; i < n; i++) {
                    out.vector[i] = data.getShort((long) i * 2);
                }
                return nulls(v, out, n);
            }
            case INTEGER:
            case DATE: {
                HeapIntVector out = new HeapIntVector(cap);
                ArrowBuf data = v.getDataBuffer();
                for (int i = 0; i < n; i++) {
                    out.vector[i] = data.getInt((long) i * 4);
                }
                return nulls(v, out, n);
            }
            case BIGINT: {
                HeapLongVector out = new HeapLongVector(cap);
                ArrowBuf data = ((BigIntVector) v).getDataBuffer();
                for (int i = 0; i < n; i++) {
                    out.vector[i] = data.getLong((long) i * 8);
                }
                return nulls(v, out, n);
            }
            case FLOAT: {
                HeapFloatVector out = new HeapFloatVector(cap);
                ArrowBuf data = ((Float4Vector) v).getDataBuffer();
                for (int i = 0; i < n; i++) {
                    out.vector[i] = data.getFloat((long) i * 4);
                }
                return nulls(v, out, n);
            }
            case DOUBLE: {
                HeapDoubleVector out = new HeapDoubleVector(cap);
                ArrowBuf data = ((Float8Vector) v).getDataBuffer();
                for (int i = 0; i < n; i++) {
                    out.vector[i] = data.getDouble((long) i * 8);
                }
                return nulls(v, out, n);
            }
            case CHAR:
            case VARCHAR:
            case VARBINARY: {
                BaseVariableWidthVector vv = (BaseVariableWidthVector) v;
                HeapBytesVector out = new HeapBytesVector(cap);
                ArrowBuf offsets = vv.getOffsetBuffer();
                int first = n == 0 ? 0 : offsets.getInt(0);
                int end = n == 0 ? 0 : offsets.getInt((long) n * 4);
                out.buffer = new byte[end - first];
                vv.getDataBuffer().getBytes(first, out.buffer, 0, end - first);
                int prev = first;
                for (int i = 0; i < n; i++) {
                    int next = offsets.getInt((long) (i + 1) * 4);
                    out.start[i] = prev - first;
                    out.length[i] = next - prev;
                    prev = next;
                }
                return nulls(v, out, n);
            }
            case BINARY: {
                FixedSizeBinaryVector fv = (FixedSizeBinaryVector) v;
                int width = fv.getByteWidth();
                HeapBytesVector out = new HeapBytesVector(cap);
                out.buffer = new byte[width * n];
                fv.getDataBuffer().getBytes(0, out.buffer, 0, width * n);
                for (int i = 0; i < n; i++) {
                    out.start[i] = i * width;
                    out.length[i] = width;
                }
                return nulls(v, out, n);
            }
            case DECIMAL: {
                DecimalType d = (DecimalType) t;
                DecimalVector dv = (DecimalVector) v;
                DecimalData[] values = new DecimalData[cap];
                for (int i = 0; i < n; i++) {
                    if (dv.isNull(i)) {
                        continue;
                    }
                    values[i] = d.getPrecision() <= 18
                            ? DecimalData.fromUnscaledLong(dv.getDataBuffer().getLong((long) i * 16), d.getPrecision(),
                                    d.getScale())
                            : DecimalData.fromBigDecimal(dv.getObject(i), d.getPrecision(), d.getScale());
                }
                return new Decimals(values);
            }
            case TIME_WITHOUT_TIME_ZONE: {
                HeapIntVector out = new HeapIntVector(cap);
                for (int i = 0; i < n; i++) {
                    if (v.isNull(i)) {
                        continue;
                    }
                    if (v instanceof TimeSecVector) {
                        out.vector[i] = ((TimeSecVector) v).get(i) * 1000;
                    } else if (v instanceof TimeMilliVector) {
                        out.vector[i] = ((TimeMilliVector) v).get(i);
                    } else if (v instanceof TimeMicroVector) {
                        out.vector[i] = (int) Math.floorDiv(((TimeMicroVector) v).get(i), 1000L);
                    } else {
                        out.vector[i] = (int) Math.floorDiv(((TimeNanoVector) v).get(i), 1_000_000L);
                    }
                }
                return nulls(v, out, n);
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                HeapTimestampVector out = new HeapTimestampVector(cap);
                TimeStampVector tv = (TimeStampVector) v;
                TimeUnit unit = ((ArrowType.Timestamp) v.getField().getType()).getUnit();
                for (int i = 0; i < n; i++) {
                    if (!tv.isNull(i)) {
                        out.setTimestamp(i, ArrowBatchReader.timestamp(tv.get(i), unit));
                    }
                }
                return nulls(v, out, n);
            }
            default:
                throw new IllegalArgumentException("Type " + t + " has no columnar copy");
        }
    }

    private static ColumnVector nulls(FieldVector v, AbstractHeapVector out, int n) {
        if (v.getNullCount() > 0) {
            for (int i = 0; i < n; i++) {
                if (v.isNull(i)) {
                    out.setNullAt(i);
                }
            }
        }
        return out;
    }

    /** DECIMAL values of one column (null where the value is null). */
    private static final class Decimals implements DecimalColumnVector {
        private final DecimalData[] values;

        Decimals(DecimalData[] values) {
            this.values = values;
        }

        @Override
        public DecimalData getDecimal(int i, int precision, int scale) {
            return values[i];
        }

        @Override
        public boolean isNullAt(int i) {
            return values[i] == null;
        }
    }
}
