package org.fluss.py.flink.source;

import org.apache.flink.table.data.RowData;

/** A row read from a bucket (its log or its lake part), its log offset and the split position after it. */
public final class FlussRecord {
    /** {@link #nextLakeRows} of records after the lake part (or of splits without one). */
    public static final long LAKE_DONE = -1L;

    public final RowData row;
    public final long offset;
    public final long timestamp;
    /** The split's next offset once this record is emitted (what a checkpoint then stores). */
    public final long nextOffset;
    /** The lake rows emitted once this record is (a checkpoint skips them after a restore), or {@link #LAKE_DONE}. */
    public final long nextLakeRows;

    public FlussRecord(RowData row, long offset, long timestamp) {
        this(row, offset, timestamp, offset + 1);
    }

    public FlussRecord(RowData row, long offset, long timestamp, long nextOffset) {
        this(row, offset, timestamp, nextOffset, LAKE_DONE);
    }

    public FlussRecord(RowData row, long offset, long timestamp, long nextOffset, long nextLakeRows) {
        this.row = row;
        this.offset = offset;
        this.timestamp = timestamp;
        this.nextOffset = nextOffset;
        this.nextLakeRows = nextLakeRows;
    }
}
