package org.fluss.py.flink.source;

import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.fluss.py.flink.client.TableBucket;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/** Split (and enumerator state) serialization; version 1. */
public final class FlussSplitSerializer implements SimpleVersionedSerializer<FlussSplit> {
    public static final FlussSplitSerializer INSTANCE = new FlussSplitSerializer();

    @Override
    public int getVersion() {
        return 1;
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
    }

    static FlussSplit read(DataInputStream in) throws IOException {
        TableBucket tb = new TableBucket(in.readLong(), in.readLong(), in.readInt());
        String partition = in.readBoolean() ? in.readUTF() : null;
        return new FlussSplit(tb, partition, in.readLong(), in.readLong());
    }

    @Override
    public FlussSplit deserialize(int version, byte[] serialized) throws IOException {
        if (version != 1) {
            throw new IOException("Unknown Fluss split version " + version);
        }
        return read(new DataInputStream(new ByteArrayInputStream(serialized)));
    }
}
