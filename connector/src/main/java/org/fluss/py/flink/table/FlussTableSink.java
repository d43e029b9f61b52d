package org.fluss.py.flink.table;

import org.fluss.py.flink.client.ConnectionConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.RowLevelModificationScanContext;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.SinkV2Provider;
import org.apache.flink.table.connector.sink.abilities.SupportsPartitioning;
import org.apache.flink.table.connector.sink.abilities.SupportsRowLevelDelete;
import org.apache.flink.table.connector.sink.abilities.SupportsRowLevelUpdate;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.sink.FlussSink;
import org.fluss.py.flink.sink.SinkSettings;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * INSERT INTO a Fluss table: append-only into a log table; upserts and deletes into a primary-key table, with a
 * partial update when the INSERT names a subset of the columns (the primary key included), and the batch-mode
 * {@code UPDATE ... SET ... WHERE} / {@code DELETE FROM ... WHERE} of a primary-key table (the planner reads the
 * matching rows through the source and hands them here as UPDATE_AFTER / DELETE rows).
 */
public class FlussTableSink implements DynamicTableSink, SupportsPartitioning, SupportsRowLevelUpdate,
        SupportsRowLevelDelete {
    private final ConnectionConfig connection;
    private final TablePath path;
    private final RowType rowType;
    private final int[] primaryKey; // positions; empty for a log table
    private final SinkSettings settings;
    private boolean rowLevelUpdate; // an UPDATE statement: its SET columns plus the key are written

    FlussTableSink(ConnectionConfig connection, TablePath path, RowType rowType, int[] primaryKey, SinkSettings settings) {
        this.connection = connection;
        this.path = path;
        this.rowType = rowType;
        this.primaryKey = primaryKey;
        this.settings = settings;
    }

    private boolean hasPrimaryKey() {
        return primaryKey.length > 0;
    }

    @Override
    public ChangelogMode getChangelogMode(ChangelogMode requestedMode) {
        if (!hasPrimaryKey()) {
            return ChangelogMode.insertOnly();
        }
        ChangelogMode.Builder b = ChangelogMode.newBuilder().addContainedKind(RowKind.INSERT)
                .addContainedKind(RowKind.UPDATE_AFTER);
        if (!settings.ignoreDelete) {
            b.addContainedKind(RowKind.DELETE);
        }
        return b.build();
    }

    @Override
    public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
        int[] targets = null;
        if (context.getTargetColumns().isPresent()) {
            int[][] paths = context.getTargetColumns().get();
            int[] t = new int[paths.length];
            for (int i = 0; i < t.length; i++) {
                t[i] = paths[i][0];
            }
            // an UPDATE hands over whole rows (read and changed by the planner): written as whole rows
            targets = rowLevelUpdate ? null : partialTargets(t);
        }
        return SinkV2Provider.of(new FlussSink(connection, path, rowType, settings, targets));
    }

    /** Target columns of a partial update (null when every column is written), checked to hold the key. */
    private int[] partialTargets(int[] columns) {
        int[] sorted = columns.clone();
        Arrays.sort(sorted);
        if (sorted.length == rowType.getFieldCount()) {
            return null;
        }
        if (!hasPrimaryKey()) {
            return null; // a log table gets nulls in the other columns (append)
        }
        for (int k : primaryKey) {
            if (Arrays.binarySearch(sorted, k) < 0) {
                throw new ValidationException("Partial update of Fluss table " + path + ": the written columns "
                        + names(sorted) + " must include every primary-key column " + names(primaryKey));
            }
        }
        return sorted;
    }

    private List<String> names(int[] positions) {
        List<String> out = new ArrayList<>();
        for (int p : positions) {
            out.add(rowType.getFieldNames().get(p));
        }
        return out;
    }

    private void requirePrimaryKey(String what) {
        if (!hasPrimaryKey()) {
            throw new ValidationException(what + " on Fluss table " + path + " needs a primary-key table: log "
                    + "tables are append-only");
        }
    }

    @Override
    public RowLevelUpdateInfo applyRowLevelUpdate(List<Column> updatedColumns,
                                                  RowLevelModificationScanContext context) {
        requirePrimaryKey("UPDATE");
        List<String> names = rowType.getFieldNames();
        for (Column c : updatedColumns) {
            if (Arrays.stream(primaryKey).anyMatch(k -> names.get(k).equals(c.getName()))) {
                throw new ValidationException("UPDATE of Fluss table " + path + " cannot change primary-key column '"
                        + c.getName() + "'");
            }
        }
        // the planner hands over whole updated rows (UPDATE_AFTER), which the writer upserts
        rowLevelUpdate = true;
        return new RowLevelUpdateInfo() {
            @Override
            public RowLevelUpdateMode getRowLevelUpdateMode() {
                return RowLevelUpdateMode.UPDATED_ROWS;
            }
        };
    }

    @Override
    public RowLevelDeleteInfo applyRowLevelDelete(RowLevelModificationScanContext context) {
        requirePrimaryKey("DELETE");
        // the deleted rows arrive as DELETE rows; the writer deletes by their primary key
        return new RowLevelDeleteInfo() {
            @Override
            public RowLevelDeleteMode getRowLevelDeleteMode() {
                return RowLevelDeleteMode.DELETED_ROWS;
            }
        };
    }

    /**
     * Static partitions ({@code INSERT INTO t PARTITION (k='v') ...}) need nothing here: the planner puts the
     * static values into the rows, and the writer routes every row by its partition-key values.
     */
    @Override
    public void applyStaticPartition(Map<String, String> partition) {}

    @Override
    public DynamicTableSink copy() {
        FlussTableSink copy = new FlussTableSink(connection, path, rowType, primaryKey, settings);
        copy.rowLevelUpdate = rowLevelUpdate;
        return copy;
    }

    @Override
    public String asSummaryString() {
        return "Fluss[" + path + "]";
    }
}
