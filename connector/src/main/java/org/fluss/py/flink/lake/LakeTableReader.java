package org.fluss.py.flink.lake;

import org.apache.flink.table.types.logical.RowType;
import org.apache.paimon.table.Table;
import org.fluss.py.flink.client.TablePath;

import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * The lake table of one Fluss table, opened once (per enumerator, split reader or row count): plans a
 * snapshot's splits, opens the lake parts of Flink splits and counts their rows.
 */
public final class LakeTableReader {
    private final Table table;

    public LakeTableReader(Map<String, String> catalogOptions, TablePath path) {
        this.table = PaimonLake.table(catalogOptions, path);
    }

    /** The snapshot's splits, serialized and grouped per bucket. */
    public Map<PaimonLake.LakeBucket, List<byte[]>> plan(long snapshotId) {
        return PaimonLake.plan(table, snapshotId);
    }

    /** The rows of a bucket's lake part, as these columns. */
    public LakeRows open(RowType columns, List<byte[]> splits) {
        return new LakeRows(table, columns, splits);
    }

    /** The number of rows of these splits: from Paimon's metadata, else by reading {@code oneColumn}. */
    public long rowCount(List<byte[]> splits, RowType oneColumn) throws IOException {
        long n = PaimonLake.rowCount(splits);
        if (n >= 0) {
            return n;
        }
        n = 0;
        try (LakeRows rows = open(oneColumn, splits)) {
            while (rows.next() != null) {
                n++;
            }
        }
        return n;
    }
}
