package org.fluss.py.flink.source;

import org.fluss.py.flink.client.ConnectionConfig;
import org.apache.flink.api.common.io.GenericInputFormat;
import org.apache.flink.core.io.GenericInputSplit;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.catalog.FlinkConversions;
import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.FlussRpcException;
import org.fluss.py.flink.client.TableBucket;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.lake.LakeConfig;
import org.fluss.py.flink.lake.LakeTableReader;
import org.fluss.py.flink.lake.LakeSnapshot;
import org.fluss.py.flink.lake.PaimonLake;
import org.fluss.py.rpc.ListPartitionInfosRequest;
import org.fluss.py.rpc.ListPartitionInfosResponse;
import org.fluss.py.rpc.PartitionInfoPb;
import org.fluss.py.rpc.TableInfoPb;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code SELECT COUNT(*)} in batch mode without reading rows: one input split whose single row is a sum over the
 * buckets (of the partitions the partition filter keeps). A primary-key bucket counts the keys its leader's KV
 * store holds (GetTableStats; the store keeps that count with its data); a log bucket counts {@code high
 * watermark - log start}: exactly what a batch scan would read. A lake-enabled log table in {@code full} mode
 * with a lake snapshot counts like Union Read: the snapshot's rows of those buckets (Paimon's row counts from the
 * manifests; the rows are read only when Paimon cannot tell) plus, per bucket, the log after the snapshot's offset.
 * A primary-key table's KV stores hold all of its keys, so its lake copy is not counted. Union Read counts
 * the lake rows of partitions Fluss dropped (they are read from the lake alone), for both kinds of table.
 */
public final class RowCountInputFormat extends GenericInputFormat<RowData> {
    private static final long serialVersionUID = 1L;

    private final ConnectionConfig connection;
    private final TablePath path;
    private final PartitionFilter partitionFilter;
    private final boolean unionRead;
    private transient boolean done;

    /** {@code unionRead}: count a lake-enabled table as Union Read does (startup mode {@code full}). */
    public RowCountInputFormat(ConnectionConfig connection, TablePath path, PartitionFilter partitionFilter,
                               boolean unionRead) {
        this.connection = connection;
        this.path = path;
        this.partitionFilter = partitionFilter;
        this.unionRead = unionRead;
    }

    @Override
    public GenericInputSplit[] createInputSplits(int numSplits) {
        return new GenericInputSplit[] {new GenericInputSplit(0, 1)};
    }

    @Override
    public void open(GenericInputSplit split) throws IOException {
        super.open(split);
        done = false;
    }

    @Override
    public boolean reachedEnd() {
        return done;
    }

    @Override
    public RowData nextRecord(RowData reuse) throws IOException {
        done = true;
        try (FlussClient client = new FlussClient(connection)) {
            return GenericRowData.of(count(client));
        }
    }

    private long count(FlussClient client) throws IOException {
        TableInfoPb info = client.tableInfo(path);
        Set<String> livePartitions = new HashSet<>();
        Map<TableBucket, String> buckets = buckets(client, info, livePartitions);
        List<TableBucket> list = new ArrayList<>(buckets.keySet());
        LakeSnapshot snapshot = unionRead && LakeConfig.isLakeEnabled(info) ? LakeSnapshot.latest(client, path) : null;
        Map<PaimonLake.LakeBucket, List<byte[]>> lake = null;
        LakeTableReader table = null;
        if (snapshot != null) {
            try {
                table = new LakeTableReader(LakeConfig.catalogOptions(info), path);
                lake = table.plan(snapshot.snapshotId);
            } catch (NoClassDefFoundError e) {
                throw new IOException(LakeConfig.paimonMissing(e));
            }
        }
        RowType firstColumn = ReadSpec.project(FlinkConversions.rowType(info), new int[] {0});
        boolean partitioned = info.getDescriptorPb().getPartitionKeysCount() > 0;
        long count = 0;
        if (lake != null && partitioned) { // partitions only the lake holds (dropped from Fluss) are read from it
            List<String> keys = info.getDescriptorPb().getPartitionKeysList();
            for (Map.Entry<PaimonLake.LakeBucket, List<byte[]>> e : lake.entrySet()) {
                String name = e.getKey().partitionName();
                if (!livePartitions.contains(name) && (partitionFilter == null
                        || partitionFilter.test(PartitionFilter.spec(name, keys)))) {
                    count += table.rowCount(e.getValue(), firstColumn);
                }
            }
        }
        if (list.isEmpty()) {
            return count;
        }
        if (info.getDescriptorPb().getSchema().getPrimaryKeysCount() > 0) {
            // the KV store of each bucket counts its keys (all of them: the lake holds a copy, never more)
            return count + client.rowCounts(path, list).values().stream().mapToLong(Long::longValue).sum();
        }
        Map<TableBucket, Long> earliest = client.listOffsets(path, list, FlussClient.OFFSET_EARLIEST, 0L);
        Map<TableBucket, Long> latest = client.listOffsets(path, list, FlussClient.OFFSET_LATEST, 0L);
        for (TableBucket tb : list) {
            long from = earliest.get(tb);
            Long lakeOffset = snapshot == null ? null : snapshot.offset(tb.partitionId, tb.bucket);
            if (lakeOffset != null) {
                List<byte[]> splits = lake.getOrDefault(new PaimonLake.LakeBucket(
                        partitioned ? buckets.get(tb) : null, tb.bucket), List.of());
                count += table.rowCount(splits, firstColumn);
                from = Math.max(from, lakeOffset);
            }
            count += Math.max(0L, latest.get(tb) - from);
        }
        return count;
    }

    /** The buckets to count (of the partitions the filter keeps); adds every live partition's name to {@code live}. */
    private Map<TableBucket, String> buckets(FlussClient client, TableInfoPb info, Set<String> live) {
        int numBuckets = info.getDescriptorPb().getBucketCount();
        Map<TableBucket, String> out = new HashMap<>();
        List<String> keys = info.getDescriptorPb().getPartitionKeysList();
        if (keys.isEmpty()) {
            for (int b = 0; b < numBuckets; b++) {
                out.put(new TableBucket(info.getTableId(), TableBucket.NO_PARTITION, b), null);
            }
            client.updateMetadata(path, null);
            return out;
        }
        ListPartitionInfosResponse r = client.adminCall(a -> a.listPartitionInfos(
                ListPartitionInfosRequest.newBuilder().setTablePath(path.toPb()).build()), "ListPartitionInfos");
        FlussRpcException.check(r.getError(), "Partitions of " + path);
        List<Long> pids = new ArrayList<>();
        for (PartitionInfoPb p : r.getPartitionsList()) {
            live.add(p.getPartitionName());
            if (partitionFilter != null && !partitionFilter.test(PartitionFilter.spec(p.getPartitionName(), keys))) {
                continue;
            }
            pids.add(p.getPartitionId());
            int partitionBuckets = FlussClient.bucketCount(p, numBuckets); // the partition's own count
            for (int b = 0; b < partitionBuckets; b++) {
                out.put(new TableBucket(info.getTableId(), p.getPartitionId(), b), p.getPartitionName());
            }
        }
        if (!pids.isEmpty()) {
            client.updateMetadata(null, pids);
        }
        return out;
    }
}
