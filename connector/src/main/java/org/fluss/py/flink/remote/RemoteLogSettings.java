package org.fluss.py.flink.remote;

import java.io.Serializable;

/**
 * How a source reads remote (tiered) log segments: {@code client.scanner.remote-log.prefetch-num} segment files
 * on disk at most per reader (the one being read included), {@code client.remote-file.download-thread-num}
 * download threads, under {@code client.scanner.io.tmpdir} (empty: the JVM's temp dir).
 */
public record RemoteLogSettings(int prefetchNum, int downloadThreads, String tmpDir) implements Serializable {
    public static final RemoteLogSettings DEFAULT = new RemoteLogSettings(4, 3, "");
}
