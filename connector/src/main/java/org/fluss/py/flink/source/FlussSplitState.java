package org.fluss.py.flink.source;

/**
 * The mutable state of an assigned split: the next offset to emit and, while its lake part is read, the lake
 * rows emitted so far ({@link FlussRecord#LAKE_DONE} once the lake part is done or when there is none).
 */
public final class FlussSplitState {
    final FlussSplit split;
    long nextOffset;
    long lakeRowsEmitted;

    FlussSplitState(FlussSplit split) {
        this.split = split;
        this.nextOffset = split.startingOffset;
        this.lakeRowsEmitted = split.hasLake() ? split.lakeRowsEmitted : FlussRecord.LAKE_DONE;
    }

    FlussSplit toSplit() {
        if (lakeRowsEmitted == FlussRecord.LAKE_DONE) {
            return split.hasLake() ? split.withoutLake(nextOffset) : split.withStartingOffset(nextOffset);
        }
        return split.withLakeRowsEmitted(lakeRowsEmitted);
    }
}
