package org.fluss.py.flink.lake;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.utils.CloseableIterator;

import java.io.IOException;
import java.util.Iterator;
import java.util.List;

/**
 * The rows of one bucket's lake part (its serialized Paimon splits, in order) as Flink rows of the given
 * columns, read lazily with Paimon's {@code TableRead} (projection pushed to Paimon). A primary-key lake table
 * is read merged (Paimon's deduplicate merge applies the tiered deletes); retractions, which a merged read
 * should not return, are skipped.
 */
public final class LakeRows implements AutoCloseable {
    private final TableRead read;
    private final LakeRowConverter converter;
    private final Iterator<byte[]> splits;
    private CloseableIterator<InternalRow> current;

    public LakeRows(Table table, RowType columns, List<byte[]> splits) {
        int[] projection = table.rowType().projectIndexes(columns.getFieldNames());
        for (int i = 0; i < projection.length; i++) {
            if (projection[i] < 0) {
                throw new IllegalStateException("Lake table " + table.name() + " has no column '"
                        + columns.getFieldNames().get(i) + "'");
            }
        }
        ReadBuilder builder = table.newReadBuilder().withProjection(projection);
        this.read = builder.newRead();
        this.converter = new LakeRowConverter(columns, builder.readType());
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
                return converter.convert(row);
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
