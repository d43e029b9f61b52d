package org.fluss.py.flink.key;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalType;

import java.io.Serializable;
import java.time.LocalDate;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Partition names of {@code fluss/key/partition.py}: the partition-key values as strings, in key order,
 * joined by {@code $}. Supported here: CHAR/STRING, BOOLEAN, TINYINT..BIGINT and DATE (yyyy-MM-dd); other
 * partition-key types are rejected with a message naming the column.
 */
public final class PartitionNames implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Pattern VALID = Pattern.compile("[A-Za-z0-9_.-]{1,200}");

    private final int[] positions;
    private final LogicalType[] types;
    private final String[] names;

    public PartitionNames(List<String> columnNames, List<LogicalType> rowType, int[] keyPositions) {
        this.positions = keyPositions.clone();
        this.types = new LogicalType[positions.length];
        this.names = new String[positions.length];
        for (int i = 0; i < positions.length; i++) {
            types[i] = rowType.get(positions[i]);
            names[i] = columnNames.get(positions[i]);
            switch (types[i].getTypeRoot()) {
                case CHAR:
                case VARCHAR:
                case BOOLEAN:
                case TINYINT:
                case SMALLINT:
                case INTEGER:
                case BIGINT:
                case DATE:
                    break;
                default:
                    throw new IllegalArgumentException("Partition key '" + names[i] + "' of type " + types[i]
                            + " is not supported by the Flink sink yet");
            }
        }
    }

    public String[] keyNames() {
        return names.clone();
    }

    /** The values of the partition keys as strings (the partition spec values). */
    public String[] values(RowData row) {
        String[] out = new String[positions.length];
        for (int i = 0; i < positions.length; i++) {
            int p = positions[i];
            if (row.isNullAt(p)) {
                throw new IllegalArgumentException("Partition key '" + names[i] + "' is null");
            }
            String v;
            switch (types[i].getTypeRoot()) {
                case CHAR:
                case VARCHAR:
                    v = row.getString(p).toString();
                    break;
                case BOOLEAN:
                    v = String.valueOf(row.getBoolean(p));
                    break;
                case TINYINT:
                    v = String.valueOf(row.getByte(p));
                    break;
                case SMALLINT:
                    v = String.valueOf(row.getShort(p));
                    break;
                case INTEGER:
                    v = String.valueOf(row.getInt(p));
                    break;
                case BIGINT:
                    v = String.valueOf(row.getLong(p));
                    break;
                default: // DATE
                    v = LocalDate.ofEpochDay(row.getInt(p)).toString();
            }
            if (!VALID.matcher(v).matches() || v.equals(".") || v.equals("..")) {
                throw new IllegalArgumentException("Invalid partition value '" + v + "' of partition key '" + names[i]
                        + "': use 1-200 characters of [A-Za-z0-9_.-]");
            }
            out[i] = v;
        }
        return out;
    }

    public String name(RowData row) {
        return String.join("$", values(row));
    }
}
