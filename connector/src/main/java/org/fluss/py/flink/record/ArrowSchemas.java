package org.fluss.py.flink.record;

import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.BinaryType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampType;

import java.util.ArrayList;
import java.util.List;

/**
 * The Arrow representation of Fluss types (the wire contract of {@code fluss/types.py}): e.g. BINARY(n) is
 * fixed_size_binary(n), TIME/TIMESTAMP use the unit of their precision (0 s, 1-3 ms, 4-6 us, 7-9 ns),
 * TIMESTAMP_LTZ carries time zone UTC; ARRAY, MAP and ROW are list, map and struct with their children.
 */
public final class ArrowSchemas {
    private ArrowSchemas() {}

    public static Schema of(RowType rowType) {
        List<Field> fields = new ArrayList<>();
        for (RowType.RowField f : rowType.getFields()) {
            fields.add(field(f.getName(), f.getType()));
        }
        return new Schema(fields);
    }

    /**
     * The Arrow field of a column or nested value: ARRAY is {@code list<item>}, MAP is {@code map<entries:
     * struct<key not null, value>>} (pyarrow's names), ROW is a struct of its fields.
     */
    public static Field field(String name, LogicalType t) {
        List<Field> children = null;
        switch (t.getTypeRoot()) {
            case ARRAY:
                children = List.of(field("item", ((ArrayType) t).getElementType()));
                break;
            case MAP: {
                MapType m = (MapType) t;
                Field entries = new Field("entries", new FieldType(false, ArrowType.Struct.INSTANCE, null),
                        List.of(field("key", m.getKeyType().copy(false)), field("value", m.getValueType())));
                children = List.of(entries);
                break;
            }
            case ROW:
                children = new ArrayList<>();
                for (RowType.RowField f : ((RowType) t).getFields()) {
                    children.add(field(f.getName(), f.getType()));
                }
                break;
            default:
        }
        return new Field(name, new FieldType(t.isNullable(), arrowType(t), null), children);
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
            case ARRAY:
                return ArrowType.List.INSTANCE;
            case MAP:
                return new ArrowType.Map(false);
            case ROW:
                return ArrowType.Struct.INSTANCE;
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
