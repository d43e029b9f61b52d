package org.fluss.py.flink.sink;

import java.io.Serializable;

/** Writer options (client.writer.* keys of Fluss). */
public final class SinkSettings implements Serializable {
    private static final long serialVersionUID = 1L;

    public final int acks;
    public final int retries;
    public final boolean idempotence;
    public final boolean roundRobin;
    public final boolean dynamicCreatePartition;
    public final int batchRows;
    public final int requestMaxBytes;
    /** {@code sink.ignore-delete}: DELETE (and UPDATE_BEFORE) rows are dropped instead of applied. */
    public final boolean ignoreDelete;
    /** {@code client.writer.compression.min-batch-size}: smaller batches are sent uncompressed (0: none is). */
    public final int minCompressedBytes;
    /** The default of {@code client.writer.compression.min-batch-size} (the Python client's too). */
    public static final int DEFAULT_MIN_COMPRESSED_BYTES = 16 * 1024;

    public SinkSettings(String acks, int retries, boolean idempotence, String noKeyAssigner,
                        boolean dynamicCreatePartition, int batchRows) {
        this(acks, retries, idempotence, noKeyAssigner, dynamicCreatePartition, batchRows, false);
    }

    public SinkSettings(String acks, int retries, boolean idempotence, String noKeyAssigner,
                        boolean dynamicCreatePartition, int batchRows, boolean ignoreDelete) {
        this(acks, retries, idempotence, noKeyAssigner, dynamicCreatePartition, batchRows, ignoreDelete,
                DEFAULT_MIN_COMPRESSED_BYTES);
    }

    public SinkSettings(String acks, int retries, boolean idempotence, String noKeyAssigner,
                        boolean dynamicCreatePartition, int batchRows, boolean ignoreDelete,
                        long minCompressedBytes) {
        this.ignoreDelete = ignoreDelete;
        if (minCompressedBytes < 0 || minCompressedBytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("Invalid value " + minCompressedBytes + " for option "
                    + "'client.writer.compression.min-batch-size': use 0 to 2147483647 bytes");
        }
        this.minCompressedBytes = (int) minCompressedBytes;
        String a = acks.trim().toLowerCase();
        if (!a.equals("all") && !a.equals("-1") && !a.equals("0") && !a.equals("1")) {
            throw new IllegalArgumentException("Invalid value '" + acks + "' for option 'client.writer.acks': use 0, "
                    + "1 or all");
        }
        String assigner = noKeyAssigner.trim().toUpperCase();
        if (!assigner.equals("STICKY") && !assigner.equals("ROUND_ROBIN")) {
            throw new IllegalArgumentException("Invalid value '" + noKeyAssigner + "' for option "
                    + "'client.writer.bucket.no-key-assigner': use STICKY or ROUND_ROBIN");
        }
        this.acks = a.equals("all") ? -1 : Integer.parseInt(a);
        this.retries = retries;
        this.idempotence = idempotence;
        this.roundRobin = assigner.equals("ROUND_ROBIN");
        this.dynamicCreatePartition = dynamicCreatePartition;
        this.batchRows = batchRows;
        this.requestMaxBytes = 8 * 1024 * 1024;
    }
}
