package org.fluss.py.flink.source;

import org.apache.flink.api.connector.source.SourceSplit;
import org.fluss.py.flink.client.TableBucket;

/**
 * One bucket (of one partition) of a log table, read from {@code startingOffset} (the next offset to read;
 * after a checkpoint the offset after the last emitted record) up to {@code stoppingOffset} (exclusive;
 * {@link #NO_STOPPING_OFFSET} = unbounded).
 */
public final class FlussSplit implements SourceSplit {
    public static final long NO_STOPPING_OFFSET = Long.MIN_VALUE;
    /**
     * Starting offset of a primary-key bucket in full mode that has not read its KV snapshot yet: the reader
     * scans the snapshot (ScanKv) first and continues with the changelog from the snapshot's log offset. A
     * bounded split of this kind with stopping offset 0 ends after the snapshot (batch reads).
     */
    public static final long FROM_SNAPSHOT = -3L;

    public final TableBucket bucket;
    public final String partitionName; // null when not partitioned
    public final long startingOffset;
    public final long stoppingOffset;

    public FlussSplit(TableBucket bucket, String partitionName, long startingOffset, long stoppingOffset) {
        this.bucket = bucket;
        this.partitionName = partitionName;
        this.startingOffset = startingOffset;
        this.stoppingOffset = stoppingOffset;
    }

    @Override
    public String splitId() {
        return bucket.toString();
    }

    public boolean fromSnapshot() {
        return startingOffset == FROM_SNAPSHOT;
    }

    public boolean isBounded() {
        return stoppingOffset != NO_STOPPING_OFFSET;
    }

    public FlussSplit withStartingOffset(long offset) {
        return new FlussSplit(bucket, partitionName, offset, stoppingOffset);
    }

    @Override
    public String toString() {
        return "FlussSplit{" + bucket + (partitionName == null ? "" : " partition=" + partitionName) + " from "
                + (fromSnapshot() ? "snapshot" : String.valueOf(startingOffset)) + (isBounded() ? " to " + stoppingOffset : "") + "}";
    }
}
