package org.fluss.py.flink.lookup;

import org.apache.flink.api.common.io.GenericInputFormat;
import org.apache.flink.core.io.GenericInputSplit;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;

import java.io.IOException;
import java.util.Iterator;

/**
 * A batch point query ({@code SELECT ... WHERE pk = x}, every primary-key column given) answered by one
 * Lookup instead of a scan of every bucket: one input split, whose reader looks the key up and returns the row
 * (or nothing). The planner still applies the WHERE clause to the result, so it stays exact.
 */
public final class PointQueryInputFormat extends GenericInputFormat<RowData> {
    private static final long serialVersionUID = 1L;

    private final Lookuper lookuper;
    private final Object[] key; // the key values (String for strings) in the order of the lookuper's key positions
    private transient Iterator<RowData> rows;

    public PointQueryInputFormat(Lookuper lookuper, Object[] key) {
        this.lookuper = lookuper;
        this.key = key;
    }

    @Override
    public GenericInputSplit[] createInputSplits(int numSplits) {
        return new GenericInputSplit[] {new GenericInputSplit(0, 1)};
    }

    @Override
    public void open(GenericInputSplit split) throws IOException {
        super.open(split);
        lookuper.open();
        GenericRowData keyRow = new GenericRowData(key.length);
        for (int i = 0; i < key.length; i++) {
            keyRow.setField(i, key[i] instanceof String ? StringData.fromString((String) key[i]) : key[i]);
        }
        rows = lookuper.lookup(keyRow).iterator();
    }

    @Override
    public boolean reachedEnd() {
        return !rows.hasNext();
    }

    @Override
    public RowData nextRecord(RowData reuse) {
        return rows.next();
    }

    @Override
    public void close() throws IOException {
        lookuper.close();
    }
}
