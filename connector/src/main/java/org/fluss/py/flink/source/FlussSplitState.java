package org.fluss.py.flink.source;

/** The mutable state of an assigned split: the next offset to emit. */
public final class FlussSplitState {
    final FlussSplit split;
    long nextOffset;

    FlussSplitState(FlussSplit split) {
        this.split = split;
        this.nextOffset = split.startingOffset;
    }

    FlussSplit toSplit() {
        return split.withStartingOffset(nextOffset);
    }
}
