package org.fluss.py.flink.source;

import org.apache.flink.table.data.RowData;

/** A row read from a bucket, its log offset and the split position after it. */
public final class FlussRecord {
    public final RowData row;
    public final long offset;
    public final long timestamp;
    /** The split's next offset once this record is emitted (what a checkpoint then stores). */
    public final long nextOffset;

    public FlussRecord(RowData row, long offset, long timestamp) {
        this(row, offset, timestamp, offset + 1);
    }

    public FlussRecord(RowData row, long offset, long timestamp, long nextOffset) {
        this.row = row;
        this.offset = offset;
        this.timestamp = timestamp;
        this.nextOffset = nextOffset;
    }
}
