package org.fluss.py.flink.remote;

/**
 * A remote log segment named in a FetchLog answer; its data file is
 * {@code <tabletDir>/<segmentId>/<startOffset:020d>.log} (see {@code fluss/fs/remote_log_layout.py}).
 */
public record RemoteSegment(String tabletDir, String segmentId, long startOffset, long endOffset, long size) {
    public String url() {
        return tabletDir.replaceAll("/+$", "") + "/" + segmentId + "/" + String.format("%020d", startOffset) + ".log";
    }

    public String describe() {
        return "remote log segment " + segmentId + " (offsets [" + startOffset + ", " + endOffset + "), " + url() + ")";
    }
}
