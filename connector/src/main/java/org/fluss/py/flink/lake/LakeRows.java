package org.fluss.py.flink.lake;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.utils.CloseableIterator;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The rows of one bucket's lake part (its serialized Paimon splits, in order) as Flink rows of the given
 * columns, read lazily with Paimon's {@code TableRead} (projection pushed to Paimon). The system columns
 * ({@code __bucket}, {@code __offset}, {@code __timestamp}) read as null from a lake table created before them. A primary-key lake table
 * is read merged (Paimon's deduplicate merge applies the tiered deletes); retractions, which a merged read
 * should not return, are skipped.
 */
public final class LakeRows implements AutoCloseable {
    private final TableRead read;
    private final LakeRowConverter converter;
    private final Iterator<byte[]> splits;
    private final int[] slots; // per requested column: its position among the columns read, -1 = always null
    private CloseableIterator<InternalRow> current;

    public LakeRows(Table table, RowType columns, List<byte[]> splits) {
        List<Integer> projection = new ArrayList<>();
        List<RowType.RowField> read = new ArrayList<>();
        slots = new int[columns.getFieldCount()];
        for (int i = 0; i < slots.length; i++) {
            String name = columns.getFieldNames().get(i);
            int index = table.rowType().getFieldIndex(name);
            if (index < 0) {
                if (!PaimonLake.SYSTEM_COLUMNS.contains(name)) {
                    throw new IllegalStateException("Lake table " + table.name() + " has no column '" + name + "'");
                }
                slots[i] = -1; // a lake table created before the system columns existed
                continue;
            }
            slots[i] = projection.size();
            projection.add(index);
            read.add(columns.getFields().get(i));
        }
        ReadBuilder builder = table.newReadBuilder()
                .withProjection(projection.stream().mapToInt(Integer::intValue).toArray());
        this.read = builder.newRead();
        this.converter = new LakeRowConverter(new RowType(read), builder.readType());
        this.splits = splits.iterator();
    }

    /** The next row, or null after the last one. */
    public GenericRowData next() throws IOException {
        while (true) {
            if (current != null && current.hasNext()) {
                InternalRow row = current.next();
                if (row.getRowKind().isRetract()) {
                    continue;
                }
                GenericRowData converted = converter.convert(row);
                if (converted.getArity() == slots.length) {
                    return converted;
                }
                GenericRowData out = new GenericRowData(slots.length);
                for (int i = 0; i < slots.length; i++) {
                    out.setField(i, slots[i] < 0 ? null : converted.getField(slots[i]));
                }
                return out;
            }
            closeCurrent();
            if (!splits.hasNext()) {
                return null;
            }
            current = read.createReader(PaimonLake.deserialize(splits.next())).toCloseableIterator();
        }
    }

    /** Skips up to {@code n} rows (those emitted before a restore); returns how many were skipped. */
    public long skip(long n) throws IOException {
        long skipped = 0;
        while (skipped < n && next() != null) {
            skipped++;
        }
        return skipped;
    }

    private void closeCurrent() throws IOException {
        if (current != null) {
            try {
                current.close();
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException(e);
            } finally {
                current = null;
            }
        }
    }

    @Override
    public void close() throws IOException {
        closeCurrent();
    }
}
