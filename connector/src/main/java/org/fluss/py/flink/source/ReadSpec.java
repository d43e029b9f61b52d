package org.fluss.py.flink.source;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.RowKind;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

/**
 * What a source reads from a table and how it turns log records into Flink rows:
 * <ul>
 *   <li>{@code projection}: the table columns to read (null = all), pushed to the tablet server by FetchLog
 *       and applied on the client to ScanKv snapshots;</li>
 *   <li>{@code primaryKey}: the log is a changelog, change types become RowKinds (+I INSERT, -U UPDATE_BEFORE,
 *       +U UPDATE_AFTER, -D DELETE);</li>
 *   <li>{@code snapshotFirst}: {@code scan.startup.mode=full} of a primary-key table, so a bucket is read as
 *       its KV snapshot (ScanKv) followed by the changelog from the snapshot's log offset;</li>
 *   <li>{@code changelog}: the {@code t$changelog} virtual table: every record is an INSERT prefixed with
 *       {@code _change_type}, {@code _log_offset}, {@code _commit_timestamp}, then {@code outputProjection}
 *       (over the metadata columns followed by the read columns; null = all) is applied;</li>
 *   <li>{@code binlog} (with {@code changelog}): the {@code t$binlog} virtual table of a primary-key table: one
 *       INSERT per change, {@code _change_type} ({@code insert}, {@code update}, {@code delete}),
 *       {@code _log_offset}, {@code _commit_timestamp}, then {@code before} and {@code after}, the row images as
 *       ROWs of every column (an update pairs the -U record with the +U after it and has the +U's offset);</li>
 *   <li>{@code lake}: {@link LakeMode#UNION} reads a lake-enabled table as its lake snapshot + the log after it
 *       ({@code scan.startup.mode=full}), {@link LakeMode#LAKE_ONLY} the lake snapshot alone ({@code t$lake});
 *       {@code mergeLake} (primary-key tables in batch mode): per bucket the log tail is merged into the lake
 *       rows by {@code keyIndexes}, the log winning;</li>
 *   <li>{@code limit}: a pushed-down LIMIT (each reader stops after that many rows; 0 = none);</li>
 *   <li>{@code partitionFilter}: pushed-down filters on the partition keys (null = every partition).</li>
 * </ul>
 */
public final class ReadSpec implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final List<String> CHANGELOG_COLUMNS = List.of("_change_type", "_log_offset", "_commit_timestamp");
    private static final String[] CHANGE_NAMES = {"+A", "+I", "-U", "+U", "-D"};

    public final RowType tableType;
    public final int[] projection;
    public final boolean primaryKey;
    public final boolean snapshotFirst;
    public final boolean changelog;
    public final int[] outputProjection;
    public final LakeMode lake;
    public final boolean mergeLake;
    public final int[] keyIndexes;
    public final long limit;
    public final PartitionFilter partitionFilter;
    public final boolean binlog;

    /** The columns of {@code t$binlog} after the metadata columns. */
    public static final List<String> BINLOG_IMAGES = List.of("before", "after");

    /** How a source uses the lake of a lake-enabled table. */
    public enum LakeMode { NONE, UNION, LAKE_ONLY }

    public ReadSpec(RowType tableType, int[] projection, boolean primaryKey, boolean snapshotFirst, boolean changelog,
                    int[] outputProjection) {
        this(tableType, projection, primaryKey, snapshotFirst, changelog, outputProjection, LakeMode.NONE, false,
                new int[0], 0L, null, false);
    }

    private ReadSpec(RowType tableType, int[] projection, boolean primaryKey, boolean snapshotFirst,
                     boolean changelog, int[] outputProjection, LakeMode lake, boolean mergeLake, int[] keyIndexes,
                     long limit, PartitionFilter partitionFilter, boolean binlog) {
        this.tableType = tableType;
        this.projection = projection;
        this.primaryKey = primaryKey;
        this.snapshotFirst = snapshotFirst;
        this.changelog = changelog;
        this.outputProjection = outputProjection;
        this.lake = lake;
        this.mergeLake = mergeLake;
        this.keyIndexes = keyIndexes;
        this.limit = limit;
        this.partitionFilter = partitionFilter;
        this.binlog = binlog;
    }

    /** The {@code t$binlog} spec of a primary-key table's columns ({@code outputProjection} over its columns). */
    public static ReadSpec binlog(RowType tableType, int[] outputProjection) {
        return new ReadSpec(tableType, null, true, false, true, outputProjection, LakeMode.NONE, false, new int[0],
                0L, null, true);
    }

    /** This spec reading the lake too ({@code mergeLake}: merge the log tail into the lake rows by these keys). */
    public ReadSpec withLake(LakeMode mode, boolean merge, int[] primaryKeyIndexes) {
        return new ReadSpec(tableType, projection, primaryKey, snapshotFirst, changelog, outputProjection, mode,
                merge, primaryKeyIndexes.clone(), limit, partitionFilter, binlog);
    }

    /** This spec with a pushed-down LIMIT ({@code 0} = none). */
    public ReadSpec withLimit(long rows) {
        return new ReadSpec(tableType, projection, primaryKey, snapshotFirst, changelog, outputProjection, lake,
                mergeLake, keyIndexes, rows, partitionFilter, binlog);
    }

    /** This spec reading only the partitions accepted by {@code filter} (null = all). */
    public ReadSpec withPartitionFilter(PartitionFilter filter) {
        return new ReadSpec(tableType, projection, primaryKey, snapshotFirst, changelog, outputProjection, lake,
                mergeLake, keyIndexes, limit, filter, binlog);
    }

    /** The columns FetchLog asks for: all of them when log rows are merged by key, else {@link #projection}. */
    public int[] fetchProjection() {
        return mergeLake ? null : projection;
    }

    /** The type of the rows FetchLog returns. */
    public RowType fetchType() {
        return project(tableType, fetchProjection());
    }

    /** The primary key of a full table row as a value with equals/hashCode (merging lake and log rows). */
    public List<Object> key(RowData fullRow) {
        GenericRowData row = (GenericRowData) fullRow;
        List<Object> key = new ArrayList<>(keyIndexes.length);
        for (int k : keyIndexes) {
            Object v = row.getField(k);
            if (v instanceof StringData) {
                v = v.toString();
            } else if (v instanceof byte[]) {
                v = java.nio.ByteBuffer.wrap((byte[]) v);
            }
            key.add(v);
        }
        return key;
    }

    /** The rows as read from the server (after the pushed-down projection). */
    public RowType readType() {
        return project(tableType, projection);
    }

    /** The rows this source produces. */
    public RowType producedType() {
        if (!changelog) {
            return readType();
        }
        List<RowType.RowField> fields = new ArrayList<>();
        fields.add(new RowType.RowField(CHANGELOG_COLUMNS.get(0), new VarCharType(false, VarCharType.MAX_LENGTH)));
        fields.add(new RowType.RowField(CHANGELOG_COLUMNS.get(1), new BigIntType(false)));
        fields.add(new RowType.RowField(CHANGELOG_COLUMNS.get(2), new LocalZonedTimestampType(false, 3)));
        if (binlog) {
            RowType image = (RowType) readType().copy(true);
            fields.add(new RowType.RowField(BINLOG_IMAGES.get(0), image));
            fields.add(new RowType.RowField(BINLOG_IMAGES.get(1), image));
        } else {
            fields.addAll(readType().getFields());
        }
        return project(new RowType(fields), outputProjection);
    }

    static RowType project(RowType type, int[] projection) {
        if (projection == null) {
            return type;
        }
        List<RowType.RowField> fields = new ArrayList<>();
        for (int p : projection) {
            fields.add(type.getFields().get(p));
        }
        return new RowType(fields);
    }

    static RowData project(RowData row, int[] projection) {
        if (projection == null) {
            return row;
        }
        GenericRowData full = (GenericRowData) row;
        GenericRowData out = new GenericRowData(full.getRowKind(), projection.length);
        for (int i = 0; i < projection.length; i++) {
            out.setField(i, full.getField(projection[i]));
        }
        return out;
    }

    /** A row read from the log (already in {@link #readType()}) as this source emits it. */
    RowData fromLog(RowData row, byte changeType, long offset, long commitTimestamp) {
        if (changelog) {
            GenericRowData data = (GenericRowData) row;
            GenericRowData out = new GenericRowData(3 + data.getArity());
            out.setField(0, StringData.fromString(changeType >= 0 && changeType < CHANGE_NAMES.length
                    ? CHANGE_NAMES[changeType] : String.valueOf(changeType)));
            out.setField(1, offset);
            out.setField(2, TimestampData.fromEpochMillis(commitTimestamp));
            for (int i = 0; i < data.getArity(); i++) {
                out.setField(3 + i, data.getField(i));
            }
            return project(out, outputProjection);
        }
        if (primaryKey) {
            row.setRowKind(rowKind(changeType));
        }
        return row;
    }

    /** A {@code t$binlog} row: {@code kind} (insert, update, delete) with the before and after images. */
    RowData binlogRow(String kind, RowData before, RowData after, long offset, long commitTimestamp) {
        GenericRowData out = new GenericRowData(5);
        out.setField(0, StringData.fromString(kind));
        out.setField(1, offset);
        out.setField(2, TimestampData.fromEpochMillis(commitTimestamp));
        out.setField(3, before);
        out.setField(4, after);
        return project(out, outputProjection);
    }

    static RowKind rowKind(byte changeType) {
        switch (changeType) {
            case 2:
                return RowKind.UPDATE_BEFORE;
            case 3:
                return RowKind.UPDATE_AFTER;
            case 4:
                return RowKind.DELETE;
            default:
                return RowKind.INSERT;
        }
    }
}
