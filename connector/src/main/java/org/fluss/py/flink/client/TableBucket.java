package org.fluss.py.flink.client;

import java.io.Serializable;
import java.util.Objects;

/** One bucket of a table or of one partition of it ({@code partitionId == -1}: not partitioned). */
public final class TableBucket implements Serializable {
    private static final long serialVersionUID = 1L;
    public static final long NO_PARTITION = -1L;

    public final long tableId;
    public final long partitionId;
    public final int bucket;

    public TableBucket(long tableId, long partitionId, int bucket) {
        this.tableId = tableId;
        this.partitionId = partitionId;
        this.bucket = bucket;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof TableBucket)) {
            return false;
        }
        TableBucket t = (TableBucket) o;
        return t.tableId == tableId && t.partitionId == partitionId && t.bucket == bucket;
    }

    @Override
    public int hashCode() {
        return Objects.hash(tableId, partitionId, bucket);
    }

    @Override
    public String toString() {
        return partitionId == NO_PARTITION ? "t" + tableId + "-b" + bucket
                : "t" + tableId + "-p" + partitionId + "-b" + bucket;
    }
}
