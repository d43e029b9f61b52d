package org.fluss.py.flink.lake;

import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.FlussRpcException;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.rpc.GetLatestLakeSnapshotRequest;
import org.fluss.py.rpc.GetLatestLakeSnapshotResponse;
import org.fluss.py.rpc.LakeBucketOffsetPb;

import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;

/**
 * A table's latest lake snapshot as the coordinator records it (GetLatestLakeSnapshot): the Paimon snapshot id
 * and, per (partition, bucket), the next offset to tier: the lake holds every record of the bucket below it.
 */
public final class LakeSnapshot implements Serializable {
    private static final long serialVersionUID = 1L;
    /** fluss/errors.py LAKE_SNAPSHOT_NOT_EXIST: nothing was tiered yet. */
    public static final int LAKE_SNAPSHOT_NOT_EXIST = 53;

    public final long snapshotId;
    private final Map<String, Long> offsets = new HashMap<>();

    private LakeSnapshot(long snapshotId) {
        this.snapshotId = snapshotId;
    }

    /** The table's latest lake snapshot, or null before its first tiering. */
    public static LakeSnapshot latest(FlussClient client, TablePath path) {
        GetLatestLakeSnapshotResponse r = client.adminCall(a -> a.getLatestLakeSnapshot(
                GetLatestLakeSnapshotRequest.newBuilder().setTablePath(path.toPb()).build()),
                "GetLatestLakeSnapshot " + path);
        if (r.getError().getCode() == LAKE_SNAPSHOT_NOT_EXIST) {
            return null;
        }
        FlussRpcException.check(r.getError(), "Lake snapshot of " + path);
        LakeSnapshot s = new LakeSnapshot(r.getSnapshot().getSnapshotId());
        for (LakeBucketOffsetPb b : r.getSnapshot().getBucketsList()) {
            s.offsets.put(key(b.getPartitionId(), b.getBucketId()), b.getLogOffset());
        }
        return s;
    }

    private static String key(long partitionId, int bucket) {
        return partitionId + ":" + bucket;
    }

    /** The next offset to tier of a bucket ({@code partitionId} -1: not partitioned); null if not in the lake. */
    public Long offset(long partitionId, int bucket) {
        return offsets.get(key(partitionId, bucket));
    }

    @Override
    public String toString() {
        return "LakeSnapshot{" + snapshotId + ", offsets=" + offsets + "}";
    }
}
