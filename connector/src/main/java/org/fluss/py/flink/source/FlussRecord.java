package org.fluss.py.flink.source;

import org.apache.flink.table.data.RowData;

/** A row read from a bucket and its log offset. */
public final class FlussRecord {
    public final RowData row;
    public final long offset;
    public final long timestamp;

    public FlussRecord(RowData row, long offset, long timestamp) {
        this.row = row;
        this.offset = offset;
        this.timestamp = timestamp;
    }
}
