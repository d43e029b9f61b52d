package org.fluss.py.flink.source;

import org.fluss.py.flink.client.ConnectionConfig;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.SplitsAssignment;
import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.FlussRpcException;
import org.fluss.py.flink.client.TableBucket;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.lake.LakeConfig;
import org.fluss.py.flink.lake.LakeSnapshot;
import org.fluss.py.flink.lake.LakeTableReader;
import org.fluss.py.flink.lake.PaimonLake;
import org.fluss.py.rpc.ListPartitionInfosRequest;
import org.fluss.py.rpc.ListPartitionInfosResponse;
import org.fluss.py.rpc.PartitionInfoPb;
import org.fluss.py.rpc.TableInfoPb;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Turns buckets into splits and assigns them to readers. At start (and, for partitioned tables in streaming
 * mode, every {@code scan.partition.discovery.interval}) it lists the buckets, resolves their starting
 * offsets from {@code scan.startup.mode} with ListOffsets (and, when bounded, the stopping offsets: the
 * latest offsets at start). Partitions created after the job started are read from their beginning.
 * A split goes to reader {@code (bucket + partition-spread) % parallelism}. A pushed-down partition filter
 * ({@link ReadSpec#partitionFilter}) drops the partitions it rejects, at start and at every discovery.
 *
 * <p>Union Read ({@link ReadSpec.LakeMode}): in its first round the enumerator of a lake-enabled table asks
 * the coordinator for the latest lake snapshot and plans that Paimon snapshot's splits (Paimon's
 * {@code ReadBuilder}); a bucket in the snapshot gets a split with the bucket's Paimon splits as its lake part
 * and its log from the snapshot's offset of the bucket (bounded: up to the latest offset at start). Buckets
 * the snapshot does not have (and partitions created later) are read as without a lake. When the log no longer
 * has the snapshot's offset (TTL), a log table reads from the log start (the records between were never tiered:
 * a gap, logged) and a primary-key bucket falls back to its KV snapshot. Partitions the lake holds that Fluss
 * dropped (expired) are read from the lake alone. {@code t$lake} gets only the lake parts.
 */
public class FlussSourceEnumerator implements SplitEnumerator<FlussSplit, FlussEnumState> {
    private static final Logger LOG = LoggerFactory.getLogger(FlussSourceEnumerator.class);

    private final SplitEnumeratorContext<FlussSplit> context;
    private final ConnectionConfig connection;
    private final TablePath path;
    private final StartupMode startup;
    private final boolean bounded;
    private final long discoveryIntervalMs;
    private final boolean snapshotFirst;
    private final ReadSpec spec;
    private final Set<TableBucket> discovered;
    private final Map<Integer, List<FlussSplit>> pendingByReader = new HashMap<>();
    private final List<FlussSplit> unassigned;
    private boolean initialDiscoveryDone;
    private volatile FlussClient client; // of the discovery round running now (see discover())

    public FlussSourceEnumerator(SplitEnumeratorContext<FlussSplit> context, ConnectionConfig connection, TablePath path,
                                 StartupMode startup, boolean bounded, long discoveryIntervalMs,
                                 ReadSpec spec, FlussEnumState restored) {
        this.spec = spec;
        this.snapshotFirst = spec.snapshotFirst;
        this.context = context;
        this.connection = connection;
        this.path = path;
        this.startup = startup;
        this.bounded = bounded;
        this.discoveryIntervalMs = discoveryIntervalMs;
        this.discovered = restored == null ? new HashSet<>() : new HashSet<>(restored.discovered);
        this.unassigned = restored == null ? new ArrayList<>() : new ArrayList<>(restored.pending);
        this.initialDiscoveryDone = restored != null;
    }

    @Override
    public void start() {
        if (!bounded && discoveryIntervalMs > 0) {
            context.callAsync(this::discover, this::onDiscovered, 0L, discoveryIntervalMs);
        } else {
            context.callAsync(this::discover, this::onDiscovered);
        }
    }

    /**
     * Runs in the worker thread: new buckets → splits with resolved offsets. Each round has its own client,
     * closed at its end: Flink closes enumerators asynchronously, possibly after the job's class loader is gone,
     * when no gRPC thread of ours may be left.
     */
    private List<FlussSplit> discover() {
        client = new FlussClient(connection);
        try {
            return discoverWith(client.tableInfo(path));
        } finally {
            client.close();
            client = null;
        }
    }

    private List<FlussSplit> discoverWith(TableInfoPb info) {
        long tableId = info.getTableId();
        int numBuckets = info.getDescriptorPb().getBucketCount();
        boolean partitioned = info.getDescriptorPb().getPartitionKeysCount() > 0;
        // buckets discovered after the first round (new partitions) start at their beginning
        boolean fromBeginning = initialDiscoveryDone;
        Map<TableBucket, String> fresh = new HashMap<>();
        Set<String> livePartitions = new HashSet<>();
        if (!partitioned) {
            for (int b = 0; b < numBuckets; b++) {
                TableBucket tb = new TableBucket(tableId, TableBucket.NO_PARTITION, b);
                if (!discovered.contains(tb)) {
                    fresh.put(tb, null);
                }
            }
        } else {
            ListPartitionInfosResponse r = client.adminCall(a -> a.listPartitionInfos(
                    ListPartitionInfosRequest.newBuilder().setTablePath(path.toPb()).build()), "ListPartitionInfos");
            FlussRpcException.check(r.getError(), "Partitions of " + path);
            List<String> keys = info.getDescriptorPb().getPartitionKeysList();
            for (PartitionInfoPb p : r.getPartitionsList()) {
                livePartitions.add(p.getPartitionName());
                if (spec.partitionFilter != null
                        && !spec.partitionFilter.test(PartitionFilter.spec(p.getPartitionName(), keys))) {
                    continue;
                }
                int partitionBuckets = FlussClient.bucketCount(p, numBuckets); // the partition's own count
                for (int b = 0; b < partitionBuckets; b++) {
                    TableBucket tb = new TableBucket(tableId, p.getPartitionId(), b);
                    if (!discovered.contains(tb)) {
                        fresh.put(tb, p.getPartitionName());
                    }
                }
            }
        }
        boolean lakeRound = !fromBeginning && spec.lake != ReadSpec.LakeMode.NONE
                && (spec.lake == ReadSpec.LakeMode.LAKE_ONLY || LakeConfig.isLakeEnabled(info));
        if (fresh.isEmpty() && !(lakeRound && partitioned)) { // a partitioned lake may hold dropped partitions
            return new ArrayList<>();
        }
        List<TableBucket> buckets = new ArrayList<>(fresh.keySet());
        if (partitioned) {
            List<Long> pids = new ArrayList<>();
            for (TableBucket tb : buckets) {
                if (!pids.contains(tb.partitionId)) {
                    pids.add(tb.partitionId);
                }
            }
            if (!pids.isEmpty()) {
                client.updateMetadata(null, pids);
            }
        } else {
            client.updateMetadata(path, null);
        }
        List<FlussSplit> splits = new ArrayList<>();
        if (lakeRound) {
            splits.addAll(lakeSplits(info, fresh, buckets, partitioned, livePartitions));
            if (spec.lake == ReadSpec.LakeMode.LAKE_ONLY) {
                return splits;
            }
        }
        if (buckets.isEmpty()) {
            return splits;
        }
        if (snapshotFirst && (bounded || !fromBeginning)) {
            // primary-key table: batch reads its current rows; full mode reads them and then the changelog
            for (TableBucket tb : buckets) {
                splits.add(new FlussSplit(tb, fresh.get(tb), FlussSplit.FROM_SNAPSHOT,
                        bounded ? 0L : FlussSplit.NO_STOPPING_OFFSET));
            }
            return splits;
        }
        Map<TableBucket, Long> start;
        StartupMode.Kind kind = fromBeginning ? StartupMode.Kind.EARLIEST : startup.kind;
        switch (kind) {
            case LATEST:
                start = client.listOffsets(path, buckets, FlussClient.OFFSET_LATEST, 0L);
                break;
            case TIMESTAMP:
                start = client.listOffsets(path, buckets, FlussClient.OFFSET_TIMESTAMP, startup.timestampMs);
                break;
            default: // FULL and EARLIEST: log tables have no snapshot, read the whole log
                start = client.listOffsets(path, buckets, FlussClient.OFFSET_EARLIEST, 0L);
        }
        Map<TableBucket, Long> stop = bounded ? client.listOffsets(path, buckets, FlussClient.OFFSET_LATEST, 0L)
                : null;
        for (TableBucket tb : buckets) {
            long from = start.get(tb);
            long to = stop == null ? FlussSplit.NO_STOPPING_OFFSET : Math.max(from, stop.get(tb));
            splits.add(new FlussSplit(tb, fresh.get(tb), from, to));
        }
        return splits;
    }

    /**
     * Union Read / {@code t$lake}: the splits of the buckets in the latest lake snapshot (removed from
     * {@code buckets}); none before the first tiering. {@code fresh} maps a bucket to its partition name.
     */
    private List<FlussSplit> lakeSplits(TableInfoPb info, Map<TableBucket, String> fresh, List<TableBucket> buckets,
                                        boolean partitioned, Set<String> livePartitions) {
        LakeSnapshot snapshot = LakeSnapshot.latest(client, path);
        if (snapshot == null) {
            LOG.info("Fluss table {}: no lake snapshot yet, reading the log only", path);
            return new ArrayList<>();
        }
        Map<PaimonLake.LakeBucket, List<byte[]>> planned;
        try {
            planned = new LakeTableReader(LakeConfig.catalogOptions(info), path).plan(snapshot.snapshotId);
        } catch (NoClassDefFoundError e) {
            throw LakeConfig.paimonMissing(e);
        }
        List<TableBucket> inLake = new ArrayList<>();
        for (TableBucket tb : buckets) {
            if (snapshot.offset(tb.partitionId, tb.bucket) != null) {
                inLake.add(tb);
            }
        }
        boolean lakeOnly = spec.lake == ReadSpec.LakeMode.LAKE_ONLY;
        boolean askOffsets = !lakeOnly && !inLake.isEmpty();
        Map<TableBucket, Long> earliest = askOffsets
                ? client.listOffsets(path, inLake, FlussClient.OFFSET_EARLIEST, 0L) : Collections.emptyMap();
        Map<TableBucket, Long> latest = bounded && askOffsets
                ? client.listOffsets(path, inLake, FlussClient.OFFSET_LATEST, 0L) : null;
        List<FlussSplit> splits = new ArrayList<>();
        for (TableBucket tb : inLake) {
            String partition = fresh.get(tb);
            List<byte[]> lake = planned.getOrDefault(new PaimonLake.LakeBucket(partitioned ? partition : null,
                    tb.bucket), Collections.emptyList());
            long from = snapshot.offset(tb.partitionId, tb.bucket);
            if (lakeOnly) {
                if (!lake.isEmpty()) {
                    splits.add(new FlussSplit(tb, partition, from, from, lake, 0L));
                }
                buckets.remove(tb);
                continue;
            }
            long logStart = earliest.get(tb);
            if (from < logStart) {
                if (snapshotFirst) { // a changelog with a gap cannot be applied: read the KV snapshot instead
                    LOG.warn("Fluss table {} {}: the log no longer has the lake offset {} (starts at {}): reading the "
                            + "KV snapshot instead of the lake", path, tb, from, logStart);
                    continue; // left in buckets: read as without a lake
                }
                LOG.warn("Fluss table {} {}: offsets [{}, {}) expired from the log before they were tiered",
                        path, tb, from, logStart);
                from = logStart;
            }
            long to = latest == null ? FlussSplit.NO_STOPPING_OFFSET : Math.max(from, latest.get(tb));
            splits.add(new FlussSplit(tb, partition, from, to, lake, 0L));
            buckets.remove(tb);
        }
        if (partitioned) {
            splits.addAll(droppedPartitionSplits(info, planned, livePartitions));
        }
        LOG.info("Fluss table {}: lake snapshot {} covers {} of the buckets", path, snapshot.snapshotId, inLake.size());
        return splits;
    }

    /**
     * The lake parts of partitions the lake holds but Fluss no longer has (dropped, e.g. expired by
     * auto-partitioning): lake-only splits, done when their lake rows are. Their buckets get partition ids of
     * their own below {@link TableBucket#NO_PARTITION} (no Fluss partition has one), numbered in name order.
     */
    private List<FlussSplit> droppedPartitionSplits(TableInfoPb info, Map<PaimonLake.LakeBucket, List<byte[]>> planned,
                                                    Set<String> livePartitions) {
        List<String> keys = info.getDescriptorPb().getPartitionKeysList();
        List<String> dropped = new ArrayList<>();
        for (PaimonLake.LakeBucket lb : planned.keySet()) {
            String name = lb.partitionName();
            if (name != null && !livePartitions.contains(name) && !dropped.contains(name)
                    && (spec.partitionFilter == null || spec.partitionFilter.test(PartitionFilter.spec(name, keys)))) {
                dropped.add(name);
            }
        }
        Collections.sort(dropped);
        List<FlussSplit> splits = new ArrayList<>();
        for (Map.Entry<PaimonLake.LakeBucket, List<byte[]>> e : planned.entrySet()) {
            int index = dropped.indexOf(e.getKey().partitionName());
            if (index >= 0 && !e.getValue().isEmpty()) {
                TableBucket tb = new TableBucket(info.getTableId(), TableBucket.NO_PARTITION - 1 - index,
                        e.getKey().bucket());
                splits.add(new FlussSplit(tb, e.getKey().partitionName(), 0L, 0L, e.getValue(), 0L));
            }
        }
        if (!dropped.isEmpty()) {
            LOG.info("Fluss table {}: partitions {} are only in the lake (dropped from Fluss): read from the lake",
                    path, dropped);
        }
        return splits;
    }

    /** Runs in the coordinator thread. */
    private void onDiscovered(List<FlussSplit> splits, Throwable error) {
        if (error != null) {
            throw new RuntimeException("Listing the buckets of Fluss table " + path + " failed", error);
        }
        initialDiscoveryDone = true;
        for (FlussSplit s : splits) {
            discovered.add(s.bucket);
            unassigned.add(s);
        }
        if (!splits.isEmpty()) {
            LOG.info("Fluss table {}: {} new splits", path, splits.size());
        }
        assignPending();
    }

    private int owner(FlussSplit s) {
        int parallelism = context.currentParallelism();
        long spread = s.bucket.partitionId == TableBucket.NO_PARTITION ? 0 : s.bucket.partitionId * 31;
        return (int) (Math.floorMod(s.bucket.bucket + spread, (long) parallelism));
    }

    private void assignPending() {
        Map<Integer, List<FlussSplit>> assignment = new HashMap<>();
        List<FlussSplit> keep = new ArrayList<>();
        for (FlussSplit s : unassigned) {
            int reader = owner(s);
            if (context.registeredReaders().containsKey(reader)) {
                assignment.computeIfAbsent(reader, k -> new ArrayList<>()).add(s);
            } else {
                keep.add(s);
            }
        }
        unassigned.clear();
        unassigned.addAll(keep);
        if (!assignment.isEmpty()) {
            context.assignSplits(new SplitsAssignment<>(assignment));
        }
        if (bounded && initialDiscoveryDone && unassigned.isEmpty()) {
            for (int reader : context.registeredReaders().keySet()) {
                context.signalNoMoreSplits(reader);
            }
        }
    }

    @Override
    public void handleSplitRequest(int subtaskId, String requesterHostname) {
        // splits are pushed
    }

    @Override
    public void addSplitsBack(List<FlussSplit> splits, int subtaskId) {
        unassigned.addAll(splits);
        assignPending();
    }

    @Override
    public void addReader(int subtaskId) {
        assignPending();
    }

    @Override
    public FlussEnumState snapshotState(long checkpointId) {
        return new FlussEnumState(new HashSet<>(discovered), new ArrayList<>(unassigned));
    }

    @Override
    public void close() {
        FlussClient running = client;
        if (running != null) { // a discovery round is running: end its calls
            running.close();
        }
    }
}
