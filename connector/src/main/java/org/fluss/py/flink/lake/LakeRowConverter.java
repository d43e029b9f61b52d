package org.fluss.py.flink.lake;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeChecks;

import java.io.Serializable;

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
            getters[i] = getter(flinkType.getTypeAt(i), paimonType.getTypeAt(i), flinkType.getFieldNames().get(i));
        }
    }

    public GenericRowData convert(InternalRow row) {
        GenericRowData out = new GenericRowData(getters.length);
        for (int i = 0; i < getters.length; i++) {
            out.setField(i, row.isNullAt(i) ? null : getters[i].get(row, i));
        }
        return out;
    }

    private static Getter getter(LogicalType flink, DataType paimon, String column) {
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
            default:
                throw new IllegalArgumentException("Column '" + column + "' of type " + flink
                        + " cannot be read from the lake");
        }
    }
}
