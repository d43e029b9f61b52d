package org.fluss.py.flink.source;

import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.fluss.py.flink.client.TableBucket;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Split (and enumerator state) serialization. Version 2 adds the lake part (Paimon splits + rows emitted);
 * version 1 (no lake part) is still read.
 */
public final class FlussSplitSerializer implements SimpleVersionedSerializer<FlussSplit> {
    public static final FlussSplitSerializer INSTANCE = new FlussSplitSerializer();
    public static final int VERSION = 2;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(FlussSplit split) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        write(out, split);
        out.flush();
        return bytes.toByteArray();
    }

    static void write(DataOutputStream out, FlussSplit s) throws IOException {
        out.writeLong(s.bucket.tableId);
        out.writeLong(s.bucket.partitionId);
        out.writeInt(s.bucket.bucket);
        out.writeBoolean(s.partitionName != null);
        if (s.partitionName != null) {
            out.writeUTF(s.partitionName);
        }
        out.writeLong(s.startingOffset);
        out.writeLong(s.stoppingOffset);
        out.writeBoolean(s.hasLake());
        if (s.hasLake()) {
            out.writeInt(s.lakeSplits.size());
            for (byte[] b : s.lakeSplits) {
                out.writeInt(b.length);
                out.write(b);
            }
            out.writeLong(s.lakeRowsEmitted);
        }
    }

    static FlussSplit read(DataInputStream in, int version) throws IOException {
        TableBucket tb = new TableBucket(in.readLong(), in.readLong(), in.readInt());
        String partition = in.readBoolean() ? in.readUTF() : null;
        long start = in.readLong();
        long stop = in.readLong();
        if (version < 2 || !in.readBoolean()) {
            return new FlussSplit(tb, partition, start, stop);
        }
        List<byte[]> lake = new ArrayList<>();
        for (int n = in.readInt(); n > 0; n--) {
            byte[] b = new byte[in.readInt()];
            in.readFully(b);
            lake.add(b);
        }
        return new FlussSplit(tb, partition, start, stop, lake, in.readLong());
    }

    @Override
    public FlussSplit deserialize(int version, byte[] serialized) throws IOException {
        if (version < 1 || version > VERSION) {
            throw new IOException("Unknown Fluss split version " + version);
        }
        return read(new DataInputStream(new ByteArrayInputStream(serialized)), version);
    }
}
