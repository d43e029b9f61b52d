package org.fluss.py.flink.source;

import org.apache.flink.api.connector.source.SourceSplit;
import org.fluss.py.flink.client.TableBucket;

import java.util.ArrayList;
import java.util.List;

/**
 * One bucket (of one partition) of a table, read from {@code startingOffset} (the next offset to read;
 * after a checkpoint the offset after the last emitted record) up to {@code stoppingOffset} (exclusive;
 * {@link #NO_STOPPING_OFFSET} = unbounded).
 *
 * <p>A bucket of a lake-enabled table read by Union Read also has a lake part: {@code lakeSplits}, the
 * serialized Paimon splits of this bucket in the lake snapshot, read before the log (which then starts at the
 * snapshot's offset of the bucket); {@code lakeRowsEmitted} rows of it were emitted before a checkpoint. Once the
 * lake part is done the split is a plain log split ({@code lakeSplits == null}).
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
    public final List<byte[]> lakeSplits; // null: no lake part (left)
    public final long lakeRowsEmitted;

    public FlussSplit(TableBucket bucket, String partitionName, long startingOffset, long stoppingOffset) {
        this(bucket, partitionName, startingOffset, stoppingOffset, null, 0L);
    }

    public FlussSplit(TableBucket bucket, String partitionName, long startingOffset, long stoppingOffset,
                      List<byte[]> lakeSplits, long lakeRowsEmitted) {
        this.bucket = bucket;
        this.partitionName = partitionName;
        this.startingOffset = startingOffset;
        this.stoppingOffset = stoppingOffset;
        this.lakeSplits = lakeSplits == null ? null : new ArrayList<>(lakeSplits);
        this.lakeRowsEmitted = lakeRowsEmitted;
    }

    @Override
    public String splitId() {
        return bucket.toString();
    }

    public boolean fromSnapshot() {
        return startingOffset == FROM_SNAPSHOT;
    }

    public boolean hasLake() {
        return lakeSplits != null;
    }

    public boolean isBounded() {
        return stoppingOffset != NO_STOPPING_OFFSET;
    }

    public FlussSplit withStartingOffset(long offset) {
        return new FlussSplit(bucket, partitionName, offset, stoppingOffset, lakeSplits, lakeRowsEmitted);
    }

    /** The split after {@code rows} rows of its lake part were emitted. */
    public FlussSplit withLakeRowsEmitted(long rows) {
        return new FlussSplit(bucket, partitionName, startingOffset, stoppingOffset, lakeSplits, rows);
    }

    /** The split once its lake part is done: a log split from {@code offset}. */
    public FlussSplit withoutLake(long offset) {
        return new FlussSplit(bucket, partitionName, offset, stoppingOffset, null, 0L);
    }

    @Override
    public String toString() {
        return "FlussSplit{" + bucket + (partitionName == null ? "" : " partition=" + partitionName)
                + (hasLake() ? " lake(" + lakeSplits.size() + " splits, " + lakeRowsEmitted + " rows emitted) then" : "")
                + " from " + (fromSnapshot() ? "snapshot" : String.valueOf(startingOffset))
                + (isBounded() ? " to " + stoppingOffset : "") + "}";
    }
}
