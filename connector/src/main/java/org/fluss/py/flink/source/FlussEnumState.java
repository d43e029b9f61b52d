package org.fluss.py.flink.source;

import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.fluss.py.flink.client.TableBucket;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Enumerator checkpoint: the buckets already turned into splits (their offsets live in the readers' state)
 * and the splits not yet assigned.
 */
public final class FlussEnumState {
    public final Set<TableBucket> discovered;
    public final List<FlussSplit> pending;

    public FlussEnumState(Set<TableBucket> discovered, List<FlussSplit> pending) {
        this.discovered = discovered;
        this.pending = pending;
    }

    /** Serializer: version 2 writes splits in split version 2 (with their lake part); version 1 is still read. */
    public static final class Serializer implements SimpleVersionedSerializer<FlussEnumState> {
        @Override
        public int getVersion() {
            return FlussSplitSerializer.VERSION;
        }

        @Override
        public byte[] serialize(FlussEnumState s) throws IOException {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(s.discovered.size());
            for (TableBucket tb : s.discovered) {
                out.writeLong(tb.tableId);
                out.writeLong(tb.partitionId);
                out.writeInt(tb.bucket);
            }
            out.writeInt(s.pending.size());
            for (FlussSplit split : s.pending) {
                FlussSplitSerializer.write(out, split);
            }
            out.flush();
            return bytes.toByteArray();
        }

        @Override
        public FlussEnumState deserialize(int version, byte[] serialized) throws IOException {
            if (version < 1 || version > FlussSplitSerializer.VERSION) {
                throw new IOException("Unknown Fluss enumerator state version " + version);
            }
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized));
            Set<TableBucket> discovered = new HashSet<>();
            for (int n = in.readInt(); n > 0; n--) {
                discovered.add(new TableBucket(in.readLong(), in.readLong(), in.readInt()));
            }
            List<FlussSplit> pending = new ArrayList<>();
            for (int n = in.readInt(); n > 0; n--) {
                pending.add(FlussSplitSerializer.read(in, version));
            }
            return new FlussEnumState(discovered, pending);
        }
    }
}
