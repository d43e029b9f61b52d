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

    public boolean isBounded() {
        return stoppingOffset != NO_STOPPING_OFFSET;
    }

    public FlussSplit withStartingOffset(long offset) {
        return new FlussSplit(bucket, partitionName, offset, stoppingOffset);
    }

    @Override
    public String toString() {
        return "FlussSplit{" + bucket + (partitionName == null ? "" : " partition=" + partitionName) + " from "
                + startingOffset + (isBounded() ? " to " + stoppingOffset : "") + "}";
    }
}
