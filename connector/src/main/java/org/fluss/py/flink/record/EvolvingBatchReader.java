package org.fluss.py.flink.record;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.columnar.vector.VectorizedColumnBatch;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.catalog.FlinkConversions;
import org.fluss.py.rpc.TableInfoPb;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Decodes log batches of any schema id of a table (ALTER TABLE ADD) as the rows of one reader, whose columns are
 * fixed when it is created: the table's columns then ({@code tableType}), or a projection of them. The rules are
 * those of {@code fluss/record/schema_evolution.py}: columns only ever append, so schema id {@code k} is the first
 * {@code n_k} columns of the latest schema ({@code TableInfoPb.schema_column_counts}); a body of id {@code k}
 * holds those (or, projected by the tablet server for {@code P}, the entries of {@code P} below {@code n_k} in
 * {@code P}'s order, column 0 alone when there is none); the reader's columns a body lacks are null, and columns
 * added after the reader was created are dropped. The table info (one GetTableInfo) is fetched when the reader
 * meets its first batch and again when it meets a schema id newer than it knows.
 *
 * <p>Bodies in a row format (INDEXED, COMPACTED: remote segments of such a log, which only the tablet server
 * re-encodes as Arrow) are decoded by {@link RowBodyReader}; they are never projected by the server.
 */
public final class EvolvingBatchReader implements AutoCloseable {
    private final int[] projection; // the server-side projection (null = none), indexes into the table's columns
    private final int[] columns; // the columns this reader returns
    private final int readerColumns; // how many columns the table had when the reader was created
    private final Supplier<TableInfoPb> latestInfo;
    private final BufferAllocator allocator;
    private final ArrowBatchReader direct; // bodies holding exactly this reader's columns
    private final Map<Integer, ArrowBatchReader> bodies = new HashMap<>(); // by schema id, for other bodies
    private final Map<Integer, int[]> held = new HashMap<>();
    private final Map<Integer, RowBodyReader> rowBodies = new HashMap<>(); // INDEXED / COMPACTED bodies, by schema id
    private List<Integer> counts; // column count of each schema id, as far as known (null: not fetched yet)
    private RowType latestType;

    public EvolvingBatchReader(RowType tableType, int[] projection, Supplier<TableInfoPb> latestInfo,
                               BufferAllocator allocator) {
        this.projection = projection;
        this.readerColumns = tableType.getFieldCount();
        this.columns = projection != null ? projection.clone() : range(readerColumns);
        this.latestInfo = latestInfo;
        this.allocator = allocator;
        this.direct = new ArrowBatchReader(project(tableType, columns), allocator);
    }

    /** The rows of a batch from row {@code firstRow} on, as this reader's columns. */
    public List<RowData> read(LogBatch.View batch, int firstRow) {
        if (!batch.arrowBody()) {
            return rowBodyReader(batch.schemaId).read(batch, firstRow);
        }
        int[] body = heldBy(batch.schemaId);
        if (body == null || Arrays.equals(body, columns)) {
            return direct.read(batch, firstRow);
        }
        ArrowBatchReader reader = bodies.computeIfAbsent(batch.schemaId,
                id -> new ArrowBatchReader(project(latestType, body), allocator));
        List<RowData> rows = reader.read(batch, firstRow);
        int[] from = new int[columns.length];
        for (int i = 0; i < columns.length; i++) {
            from[i] = -1;
            for (int j = 0; j < body.length; j++) {
                if (body[j] == columns[i]) {
                    from[i] = j;
                }
            }
        }
        List<RowData> out = new ArrayList<>(rows.size());
        for (RowData r : rows) {
            GenericRowData g = (GenericRowData) r;
            GenericRowData row = new GenericRowData(g.getRowKind(), columns.length);
            for (int i = 0; i < columns.length; i++) {
                if (from[i] >= 0) {
                    row.setField(i, g.getField(from[i]));
                }
            }
            out.add(row);
        }
        return out;
    }

    /**
     * The whole batch as heap column vectors of this reader's columns, when its body holds exactly them in the
     * Arrow format and their types are flat ({@link ColumnarBatches}); null otherwise (then use {@link #read}).
     */
    public VectorizedColumnBatch readColumnar(LogBatch.View batch) {
        if (!batch.arrowBody() || !direct.columnar()) {
            return null;
        }
        int[] body = heldBy(batch.schemaId);
        if (body != null && !Arrays.equals(body, columns)) {
            return null;
        }
        return direct.readColumnar(batch);
    }

    /**
     * The reader of row bodies (INDEXED, COMPACTED) of a schema id: such a body is never projected by the tablet
     * server, so it holds the first {@code n_k} columns; they are decoded straight into this reader's columns.
     */
    private RowBodyReader rowBodyReader(int schemaId) {
        RowBodyReader got = rowBodies.get(schemaId);
        if (got == null) {
            int n = columnCount(schemaId);
            int[] target = new int[n];
            Arrays.fill(target, -1);
            for (int i = 0; i < columns.length; i++) {
                if (columns[i] < n) {
                    target[columns[i]] = i;
                }
            }
            got = new RowBodyReader(project(latestType, range(n)), target, columns.length);
            rowBodies.put(schemaId, got);
        }
        return got;
    }

    /** How many (leading) table columns a body of {@code schemaId} holds. */
    private int columnCount(int schemaId) {
        if (counts == null || schemaId < 1 || schemaId > counts.size()) {
            refresh();
        }
        if (schemaId < 1 || schemaId > counts.size()) {
            throw new IllegalStateException("Log batch of schema id " + schemaId + ": the table has schema ids 1 to "
                    + counts.size());
        }
        return counts.get(schemaId - 1);
    }

    /** The table columns a body of {@code schemaId} holds; null when they are this reader's columns for sure. */
    private int[] heldBy(int schemaId) {
        int[] got = held.get(schemaId);
        if (got != null) {
            return got;
        }
        int n = columnCount(schemaId);
        if (projection == null) {
            got = range(n);
        } else {
            got = Arrays.stream(projection).filter(c -> c < n).toArray();
            if (got.length == 0) {
                got = new int[] {0};
            }
        }
        held.put(schemaId, got);
        return got;
    }

    private void refresh() {
        TableInfoPb info = latestInfo.get();
        latestType = FlinkConversions.rowType(info);
        List<Integer> known = info.getSchemaColumnCountsList();
        if (known.isEmpty()) {  // a table never altered: every schema id has all the columns
            known = new ArrayList<>();
            for (int i = 0; i < Math.max(1, info.getSchemaId()); i++) {
                known.add(latestType.getFieldCount());
            }
        }
        counts = known;
        if (latestType.getFieldCount() < readerColumns) {
            throw new IllegalStateException("The table has " + latestType.getFieldCount() + " columns, fewer than "
                    + "the " + readerColumns + " this reader was created with");
        }
    }

    private static int[] range(int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = i;
        }
        return out;
    }

    private static RowType project(RowType type, int[] columns) {
        List<RowType.RowField> fields = new ArrayList<>(columns.length);
        for (int c : columns) {
            fields.add(type.getFields().get(c));
        }
        return new RowType(fields);
    }

    @Override
    public void close() {
        direct.close();
        for (ArrowBatchReader r : bodies.values()) {
            r.close();
        }
        bodies.clear();
    }
}
