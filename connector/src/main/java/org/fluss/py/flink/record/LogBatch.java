package org.fluss.py.flink.record;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The log batch format of {@code fluss/record/log_batch.py} (the spec; also {@code docs/log-format.md}):
 * a 56-byte little-endian header with a CRC32C of everything after the CRC field, an optional change-type
 * vector (absent when APPEND_ONLY is set), then one Arrow IPC encapsulated record-batch message.
 *
 * <pre>
 *  0 crc u32 | 4 magic u8 | 5 attributes u8 | 6 reserved u16 | 8 base_offset i64 | 16 batch_length i32
 *  20 record_count i32 | 24 commit_timestamp i64 | 32 writer_id i64 | 40 leader_epoch i32 | 44 schema_id i32
 *  48 batch_sequence i32 | 52 reserved u32
 * </pre>
 */
public final class LogBatch {
    public static final int HEADER_SIZE = 56;
    public static final byte CURRENT_MAGIC = 1;
    public static final int COMPRESSION_NONE = 0;
    public static final int COMPRESSION_ZSTD = 1;
    public static final int COMPRESSION_LZ4_FRAME = 2;
    public static final int COMPRESSION_MASK = 0x07;
    public static final int APPEND_ONLY_FLAG = 0x08;
    /** Attribute bits 4-5: the body format (0 ARROW, 1 INDEXED, 2 COMPACTED; {@code table.log.format}). */
    public static final int BODY_FORMAT_MASK = 0x30;
    private static final String[] BODY_FORMATS = {"ARROW", "INDEXED", "COMPACTED", "UNKNOWN"};
    public static final long NO_WRITER_ID = -1L;
    public static final int NO_BATCH_SEQUENCE = -1;

    private LogBatch() {}

    /** One batch inside a buffer of concatenated batches (a view: nothing is copied). */
    public static final class View {
        public final byte[] buf;
        public final int position;
        public final int length;
        public final int attributes;
        public final long baseOffset;
        public final int recordCount;
        public final long commitTimestamp;
        public final long writerId;
        public final int leaderEpoch;
        public final int schemaId;
        public final int batchSequence;
        public final long crc;

        View(byte[] buf, int position) {
            ByteBuffer h = ByteBuffer.wrap(buf, position, HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            this.buf = buf;
            this.position = position;
            this.crc = h.getInt(position) & 0xffffffffL;
            byte magic = h.get(position + 4);
            if (magic != CURRENT_MAGIC) {
                throw new IllegalStateException("Unsupported log batch magic " + magic + " at position " + position);
            }
            this.attributes = h.get(position + 5) & 0xff;
            this.baseOffset = h.getLong(position + 8);
            this.length = h.getInt(position + 16);
            this.recordCount = h.getInt(position + 20);
            this.commitTimestamp = h.getLong(position + 24);
            this.writerId = h.getLong(position + 32);
            this.leaderEpoch = h.getInt(position + 40);
            this.schemaId = h.getInt(position + 44);
            this.batchSequence = h.getInt(position + 48);
        }

        public boolean appendOnly() {
            return (attributes & APPEND_ONLY_FLAG) != 0;
        }

        public int compression() {
            return attributes & COMPRESSION_MASK;
        }

        /** Whether the body is an Arrow IPC message (a row-format log's batches come as Arrow with as_arrow). */
        public boolean arrowBody() {
            return (attributes & BODY_FORMAT_MASK) == 0;
        }

        public String bodyFormat() {
            return BODY_FORMATS[(attributes & BODY_FORMAT_MASK) >> 4];
        }

        public long lastOffset() {
            return baseOffset + recordCount - 1;
        }

        public long nextOffset() {
            return baseOffset + recordCount;
        }

        /** Change types (+I=1, -U=2, +U=3, -D=4) or null for an append-only batch (+A everywhere). */
        public byte[] changeTypes() {
            if (appendOnly()) {
                return null;
            }
            byte[] out = new byte[recordCount];
            System.arraycopy(buf, position + HEADER_SIZE, out, 0, recordCount);
            return out;
        }

        /** Start of the Arrow IPC message. */
        public int ipcPosition() {
            return position + HEADER_SIZE + (appendOnly() ? 0 : pad8(recordCount));
        }

        public int ipcLength() {
            return position + length - ipcPosition();
        }

        public boolean isValid() {
            return crc == crc32c(buf, position + 4, length - 4);
        }

        public void ensureValid() {
            if (!isValid()) {
                throw new IllegalStateException("Corrupt log batch at offset " + baseOffset + ": CRC mismatch");
            }
        }
    }

    /** Splits a buffer of concatenated batches; a trailing partial batch is ignored. */
    public static List<View> parse(byte[] buf) {
        List<View> out = new ArrayList<>();
        int pos = 0;
        while (pos + HEADER_SIZE <= buf.length) {
            int len = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN).getInt(pos + 16);
            if (len < HEADER_SIZE || pos + len > buf.length) {
                break;
            }
            out.add(new View(buf, pos));
            pos += len;
        }
        return out;
    }

    /**
     * Builds an append-only batch (offsets unassigned) around an Arrow IPC record-batch message.
     *
     * @param ipc the encapsulated Arrow message, its length a multiple of 8
     */
    public static byte[] build(byte[] ipc, int recordCount, int schemaId, int compression, long writerId,
                               int batchSequence) {
        return build(ipc, null, recordCount, schemaId, compression, writerId, batchSequence, 0L, 0, 0L);
    }

    /** Builds a batch; {@code changeTypes == null} makes it append-only. */
    public static byte[] build(byte[] ipc, byte[] changeTypes, int recordCount, int schemaId, int compression,
                               long writerId, int batchSequence, long baseOffset, int leaderEpoch,
                               long commitTimestamp) {
        return build(ipc, ipc.length, changeTypes, recordCount, schemaId, compression, writerId, batchSequence,
                baseOffset, leaderEpoch, commitTimestamp);
    }

    /** Builds a batch from the first {@code ipcLength} bytes of {@code ipc}. */
    public static byte[] build(byte[] ipc, int ipcLength, byte[] changeTypes, int recordCount, int schemaId,
                               int compression, long writerId, int batchSequence, long baseOffset,
                               int leaderEpoch, long commitTimestamp) {
        int ipcLen = pad8(ipcLength);
        int ctLen = changeTypes == null ? 0 : pad8(recordCount);
        int total = HEADER_SIZE + ctLen + ipcLen;
        byte[] out = new byte[total];
        ByteBuffer h = ByteBuffer.wrap(out).order(ByteOrder.LITTLE_ENDIAN);
        int attributes = compression & COMPRESSION_MASK;
        if (changeTypes == null) {
            attributes |= APPEND_ONLY_FLAG;
        } else {
            System.arraycopy(changeTypes, 0, out, HEADER_SIZE, recordCount);
        }
        h.put(4, CURRENT_MAGIC);
        h.put(5, (byte) attributes);
        h.putShort(6, (short) 0);
        h.putLong(8, baseOffset);
        h.putInt(16, total);
        h.putInt(20, recordCount);
        h.putLong(24, commitTimestamp);
        h.putLong(32, writerId);
        h.putInt(40, leaderEpoch);
        h.putInt(44, schemaId);
        h.putInt(48, batchSequence);
        h.putInt(52, 0);
        System.arraycopy(ipc, 0, out, HEADER_SIZE + ctLen, ipcLength);
        h.putInt(0, (int) crc32c(out, 4, total - 4));
        return out;
    }

    /**
     * Stamps a built batch with another batch sequence, in place, and recomputes its CRC (a writer that restarts
     * a bucket's sequences at 0 after the leader forgot it).
     */
    public static void restampSequence(byte[] batch, int batchSequence) {
        ByteBuffer h = ByteBuffer.wrap(batch).order(ByteOrder.LITTLE_ENDIAN);
        h.putInt(48, batchSequence);
        h.putInt(0, (int) crc32c(batch, 4, batch.length - 4));
    }

    public static long crc32c(byte[] buf, int offset, int length) {
        CRC32C crc = new CRC32C();
        crc.update(buf, offset, length);
        return crc.getValue();
    }

    static int pad8(int n) {
        return (n + 7) & ~7;
    }
}
