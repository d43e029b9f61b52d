package org.fluss.py.flink.lake;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericMapData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeChecks;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Paimon rows (in the lake table's read type) to Flink rows (the same columns in Flink types): one getter per
 * column, chosen by the Flink type, with the precision of Paimon's type for decimals and timestamps (a Fluss
 * TIMESTAMP(p) is stored with the precision of its Arrow unit: 0, 3, 6 or 9). Values are copied, so the Paimon
 * row (reused by Paimon's readers) may change afterwards.
 */
public final class LakeRowConverter {
    /** Reads one column of a Paimon row as a Flink internal value. */
    private interface Getter extends Serializable {
        Object get(InternalRow row, int pos);
    }

    private final Getter[] getters;

    public LakeRowConverter(RowType flinkType, org.apache.paimon.types.RowType paimonType) {
        getters = new Getter[flinkType.getFieldCount()];
        for (int i = 0; i < getters.length; i++) {
            getters[i] = getter(flinkType.getTypeAt(i), paimonType.getTypeAt(i), flinkType.getFieldNames().get(i), i);
        }
    }

    public GenericRowData convert(InternalRow row) {
        GenericRowData out = new GenericRowData(getters.length);
        for (int i = 0; i < getters.length; i++) {
            out.setField(i, row.isNullAt(i) ? null : getters[i].get(row, i));
        }
        return out;
    }

    private static Getter getter(LogicalType flink, DataType paimon, String column, int index) {
        switch (flink.getTypeRoot()) {
            case BOOLEAN:
                return InternalRow::getBoolean;
            case TINYINT:
                return InternalRow::getByte;
            case SMALLINT:
                return InternalRow::getShort;
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE: // Paimon and Flink: milliseconds of the day
                return InternalRow::getInt;
            case BIGINT:
                return InternalRow::getLong;
            case FLOAT:
                return InternalRow::getFloat;
            case DOUBLE:
                return InternalRow::getDouble;
            case CHAR:
            case VARCHAR:
                return (row, pos) -> StringData.fromString(row.getString(pos).toString());
            case BINARY:
            case VARBINARY:
                return (row, pos) -> row.getBinary(pos).clone();
            case DECIMAL: {
                DecimalType d = (DecimalType) flink;
                int p = DataTypeChecks.getPrecision(paimon);
                int s = DataTypeChecks.getScale(paimon);
                return (row, pos) -> DecimalData.fromBigDecimal(row.getDecimal(pos, p, s).toBigDecimal(),
                        d.getPrecision(), d.getScale());
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                int p = DataTypeChecks.getPrecision(paimon);
                return (row, pos) -> {
                    Timestamp t = row.getTimestamp(pos, p);
                    return TimestampData.fromEpochMillis(t.getMillisecond(), t.getNanoOfMillisecond());
                };
            }
            case ARRAY:
            case MAP:
            case ROW: {
                InternalRow.FieldGetter field = InternalRow.createFieldGetter(paimon, index);
                Value value = value(flink, paimon, column);
                return (row, pos) -> value.convert(field.getFieldOrNull(row));
            }
            default:
                throw new IllegalArgumentException("Column '" + column + "' of type " + flink
                        + " cannot be read from the lake");
        }
    }

    /** Converts a Paimon internal value (as Paimon's field and element getters return it) to Flink's. */
    private interface Value extends Serializable {
        Object convert(Object paimonValue);
    }

    private static Value value(LogicalType flink, DataType paimon, String path) {
        switch (flink.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
                return v -> StringData.fromString(v.toString());
            case BINARY:
            case VARBINARY:
                return v -> ((byte[]) v).clone();
            case DECIMAL: {
                DecimalType d = (DecimalType) flink;
                return v -> DecimalData.fromBigDecimal(((org.apache.paimon.data.Decimal) v).toBigDecimal(),
                        d.getPrecision(), d.getScale());
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return v -> TimestampData.fromEpochMillis(((Timestamp) v).getMillisecond(),
                        ((Timestamp) v).getNanoOfMillisecond());
            case ARRAY: {
                DataType paimonElement = ((org.apache.paimon.types.ArrayType) paimon).getElementType();
                Value element = value(((ArrayType) flink).getElementType(), paimonElement, path + "[]");
                InternalArray.ElementGetter getter = InternalArray.createElementGetter(paimonElement);
                return v -> {
                    InternalArray a = (InternalArray) v;
                    Object[] out = new Object[a.size()];
                    for (int i = 0; i < out.length; i++) {
                        Object e = getter.getElementOrNull(a, i);
                        out[i] = e == null ? null : element.convert(e);
                    }
                    return new GenericArrayData(out);
                };
            }
            case MAP: {
                org.apache.paimon.types.MapType pm = (org.apache.paimon.types.MapType) paimon;
                MapType fm = (MapType) flink;
                Value key = value(fm.getKeyType(), pm.getKeyType(), path + "{key}");
                Value item = value(fm.getValueType(), pm.getValueType(), path + "{value}");
                InternalArray.ElementGetter keys = InternalArray.createElementGetter(pm.getKeyType());
                InternalArray.ElementGetter items = InternalArray.createElementGetter(pm.getValueType());
                return v -> {
                    InternalMap m = (InternalMap) v;
                    Map<Object, Object> out = new LinkedHashMap<>();
                    for (int i = 0; i < m.size(); i++) {
                        Object k = keys.getElementOrNull(m.keyArray(), i);
                        Object e = items.getElementOrNull(m.valueArray(), i);
                        out.put(k == null ? null : key.convert(k), e == null ? null : item.convert(e));
                    }
                    return new GenericMapData(out);
                };
            }
            case ROW: {
                org.apache.paimon.types.RowType pr = (org.apache.paimon.types.RowType) paimon;
                RowType fr = (RowType) flink;
                int n = fr.getFieldCount();
                Value[] fields = new Value[n];
                InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[n];
                for (int i = 0; i < n; i++) {
                    fields[i] = value(fr.getTypeAt(i), pr.getTypeAt(i), path + "." + fr.getFieldNames().get(i));
                    getters[i] = InternalRow.createFieldGetter(pr.getTypeAt(i), i);
                }
                return v -> {
                    InternalRow r = (InternalRow) v;
                    GenericRowData out = new GenericRowData(n);
                    for (int i = 0; i < n; i++) {
                        Object f = getters[i].getFieldOrNull(r);
                        out.setField(i, f == null ? null : fields[i].convert(f));
                    }
                    return out;
                };
            }
            case BOOLEAN:
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
            case BIGINT:
            case FLOAT:
            case DOUBLE:
                return v -> v; // boxed primitives are the same in Paimon and Flink
            default:
                throw new IllegalArgumentException("Value " + path + " of type " + flink + " cannot be read from the lake");
        }
    }
}
