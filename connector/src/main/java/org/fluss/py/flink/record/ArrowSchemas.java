package org.fluss.py.flink.record;

import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.types.logical.BinaryType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampType;

import java.util.ArrayList;
import java.util.List;

/**
 * The Arrow representation of Fluss types (the wire contract of {@code fluss/types.py}): e.g. BINARY(n) is
 * fixed_size_binary(n), TIME/TIMESTAMP use the unit of their precision (0 s, 1-3 ms, 4-6 us, 7-9 ns),
 * TIMESTAMP_LTZ carries time zone UTC.
 */
public final class ArrowSchemas {
    private ArrowSchemas() {}

    public static Schema of(RowType rowType) {
        List<Field> fields = new ArrayList<>();
        for (RowType.RowField f : rowType.getFields()) {
            fields.add(new Field(f.getName(), new FieldType(f.getType().isNullable(), arrowType(f.getType()), null),
                    null));
        }
        return new Schema(fields);
    }

    public static ArrowType arrowType(LogicalType t) {
        switch (t.getTypeRoot()) {
            case BOOLEAN:
                return ArrowType.Bool.INSTANCE;
            case TINYINT:
                return new ArrowType.Int(8, true);
            case SMALLINT:
                return new ArrowType.Int(16, true);
            case INTEGER:
                return new ArrowType.Int(32, true);
            case BIGINT:
                return new ArrowType.Int(64, true);
            case FLOAT:
                return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
            case DOUBLE:
                return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
            case CHAR:
            case VARCHAR:
                return ArrowType.Utf8.INSTANCE;
            case DECIMAL:
                DecimalType d = (DecimalType) t;
                return new ArrowType.Decimal(d.getPrecision(), d.getScale(), 128);
            case DATE:
                return new ArrowType.Date(DateUnit.DAY);
            case TIME_WITHOUT_TIME_ZONE: {
                int p = ((TimeType) t).getPrecision();
                TimeUnit unit = unit(p);
                return new ArrowType.Time(unit, unit == TimeUnit.SECOND || unit == TimeUnit.MILLISECOND ? 32 : 64);
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return new ArrowType.Timestamp(unit(((TimestampType) t).getPrecision()), null);
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return new ArrowType.Timestamp(unit(((LocalZonedTimestampType) t).getPrecision()), "UTC");
            case BINARY:
                return new ArrowType.FixedSizeBinary(((BinaryType) t).getLength());
            case VARBINARY:
                return ArrowType.Binary.INSTANCE;
            default:
                throw new IllegalArgumentException("Type " + t + " has no Arrow mapping in Fluss");
        }
    }

    public static TimeUnit unit(int precision) {
        if (precision == 0) {
            return TimeUnit.SECOND;
        }
        return precision <= 3 ? TimeUnit.MILLISECOND : precision <= 6 ? TimeUnit.MICROSECOND : TimeUnit.NANOSECOND;
    }
}
