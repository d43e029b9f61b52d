package org.fluss.py.flink.lake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.paimon.CoreOptions;
import org.apache.paimon.Snapshot;
import org.apache.paimon.append.AppendCompactCoordinator;
import org.apache.paimon.append.AppendCompactTask;
import org.apache.paimon.consumer.ConsumerManager;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.operation.BaseAppendFileStoreWrite;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.table.ExpireSnapshotsImpl;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.sink.TableCommitImpl;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.SnapshotManager;
import org.fluss.py.flink.client.TablePath;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Lake maintenance run by the tiering job after it reported a lake commit (the Java step of
 * {@code tiering_job/job.py}), with Paimon's own Java code:
 *
 * <ul>
 *   <li><b>Compaction</b> ({@code table.datalake.auto-compaction}): the buckets the round wrote are compacted
 *       as Paimon's writers would compact them ({@code TableWrite.compact(partition, bucket, false)}: Paimon's
 *       strategy decides, e.g. {@code num-sorted-run.compaction-trigger} for primary-key tables,
 *       {@code compaction.min.file-num} for bucketed append tables); a bucket-unaware append table (a log table
 *       without bucket key) by Paimon's {@code AppendCompactCoordinator}. One commit (kind COMPACT) with its own
 *       commit user; it changes no row, so the Union Read of any snapshot stays exact.</li>
 *   <li><b>Snapshot expiry</b> ({@code table.datalake.auto-expire-snapshot}): Paimon's {@code ExpireSnapshots}
 *       with the lake table's retention options ({@code snapshot.num-retained.min/max},
 *       {@code snapshot.time-retained}, settable as {@code paimon.*} table properties), except that the snapshot
 *       the coordinator's lake snapshot names (what Union Read reads) and every later one are always retained.</li>
 * </ul>
 *
 * <p>Input and output are the JSON result of a tiering round; the input carries {@code "maintenance":
 * {"catalog": {..}, "database", "table", "compact", "expire", "retain_from": snapshot id, "buckets": [[partition
 * name or null, bucket], ..]}} ({@code fluss/lake/maintenance.py}; no {@code retain_from}: the committer did not
 * report, nothing is expired); the output adds {@code "compacted"} (buckets compacted, the new snapshot id) and
 * {@code "expired"} (snapshots expired), or {@code "maintenance_error"}: a failing table never fails the job. Any
 * other commit (the compaction's) is made with expiry disabled so that only this guarded expiry removes
 * snapshots.
 */
public final class LakeMaintenance implements MapFunction<String, String> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(LakeMaintenance.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Commit user of compaction commits (distinct from the tiering job's {@code fluss-tiering}). */
    public static final String COMMIT_USER_PREFIX = "fluss-lake-maintenance-";

    @Override
    public String map(String value) throws Exception {
        JsonNode parsed = JSON.readTree(value);
        if (!(parsed instanceof ObjectNode) || !parsed.has("maintenance")) {
            return value;
        }
        ObjectNode result = (ObjectNode) parsed;
        JsonNode spec = result.remove("maintenance");
        try {
            Map<String, Object> done = maintain(spec);
            done.forEach((k, v) -> result.set(k, JSON.valueToTree(v)));
        } catch (Exception e) {
            LOG.warn("lake maintenance of {} failed", result.path("table").asText(), e);
            result.put("maintenance_error", e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        return JSON.writeValueAsString(result);
    }

    static Map<String, Object> maintain(JsonNode spec) throws Exception {
        Map<String, String> catalog = new HashMap<>();
        spec.get("catalog").fields().forEachRemaining(e -> catalog.put(e.getKey(), e.getValue().asText()));
        TablePath path = new TablePath(spec.get("database").asText(), spec.get("table").asText());
        Map<String, Object> out = new LinkedHashMap<>();
        if (spec.path("compact").asBoolean(false)) {
            List<List<Object>> buckets = new ArrayList<>();
            spec.path("buckets").forEach(b -> buckets.add(List.of(b.get(0).isNull() ? "" : b.get(0).asText(),
                    b.get(1).asInt())));
            out.put("compacted", compact((FileStoreTable) PaimonLake.table(catalog, path), buckets));
        }
        if (spec.path("expire").asBoolean(false) && spec.hasNonNull("retain_from")) {
            out.put("expired", expire((FileStoreTable) PaimonLake.table(catalog, path),
                    spec.get("retain_from").asLong()));
        }
        return out;
    }

    /**
     * Compacts the given buckets ({@code [partition name ("" when not partitioned), bucket]}) with Paimon's own
     * compaction; returns the compacted buckets and the snapshot of the compaction commit (null: nothing to do).
     */
    static Map<String, Object> compact(FileStoreTable table, List<List<Object>> buckets) throws Exception {
        FileStoreTable quiet = withoutCommitExpiry(table);
        String user = COMMIT_USER_PREFIX + UUID.randomUUID();
        List<CommitMessage> messages = new ArrayList<>();
        int compacted = 0;
        if (quiet.coreOptions().bucket() == -1 && quiet.primaryKeys().isEmpty()) {
            // a bucket-unaware append table: Paimon's coordinator plans the small files to merge
            List<AppendCompactTask> tasks = new AppendCompactCoordinator(quiet, false).run();
            BaseAppendFileStoreWrite write = (BaseAppendFileStoreWrite) quiet.store().newWrite(user);
            try {
                for (AppendCompactTask task : tasks) {
                    messages.add(task.doCompact(quiet, write));
                }
            } finally {
                write.close();
            }
            compacted = tasks.size();
        } else {
            Set<List<Object>> wanted = Set.copyOf(buckets);
            RowType partitionType = quiet.rowType().project(quiet.partitionKeys());
            Map<List<Object>, BinaryRow> targets = new LinkedHashMap<>();
            for (Split s : quiet.newReadBuilder().newScan().plan().splits()) {
                DataSplit d = (DataSplit) s;
                String name = quiet.partitionKeys().isEmpty() ? "" : PaimonLake.partitionName(d.partition(),
                        partitionType);
                List<Object> key = List.of(name, d.bucket());
                if (wanted.contains(key)) {
                    targets.putIfAbsent(key, d.partition());
                }
            }
            try (TableWriteImpl<?> write = quiet.newWrite(user)) {
                for (Map.Entry<List<Object>, BinaryRow> t : targets.entrySet()) {
                    write.compact(t.getValue(), (Integer) t.getKey().get(1), false);
                }
                messages.addAll(write.prepareCommit(true, BatchWriteBuilder.COMMIT_IDENTIFIER));
            }
            compacted = targets.size();
        }
        Long snapshot = null;
        if (messages.stream().anyMatch(m -> !((CommitMessageImpl) m).isEmpty())) {
            try (TableCommitImpl commit = quiet.newCommit(user)) {
                commit.commit(BatchWriteBuilder.COMMIT_IDENTIFIER, messages);
            }
            Snapshot latest = quiet.snapshotManager().latestSnapshot();
            snapshot = latest == null ? null : latest.id();
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("buckets", compacted);
        out.put("snapshot_id", snapshot);
        return out;
    }

    /**
     * Expires snapshots by the table's retention options, never {@code retainFrom} (the coordinator's lake
     * snapshot) nor any later one; returns how many were expired.
     *
     * <p>Paimon's {@code ExpireSnapshots.expire()} counts {@code snapshot.num-retained.min} back from the latest
     * snapshot it reads itself, so no retention count chosen here can protect {@code retainFrom}: a tiering round
     * that commits between that choice and Paimon's read moves the latest snapshot on, and the coordinator's
     * snapshot would go while the coordinator still names it. So the same rule as Paimon's (at most
     * {@code num-retained.max}, at least {@code num-retained.min}, nothing newer than {@code time-retained},
     * at most {@code snapshot.expire.limit} at once, nothing a Paimon consumer still reads) picks an end bound,
     * the bound is capped at {@code retainFrom}, and Paimon's {@code expireUntil} removes the snapshots below it.
     */
    static int expire(FileStoreTable table, long retainFrom) {
        SnapshotManager snapshots = table.snapshotManager();
        Long latest = snapshots.latestSnapshotId();
        Long earliest = snapshots.earliestSnapshotId();
        if (latest == null || earliest == null) {
            return 0;
        }
        ExpireConfig config = table.coreOptions().expireConfig();
        long olderThanMillis = System.currentTimeMillis() - config.getSnapshotTimeRetain().toMillis();
        long from = Math.max(latest - config.getSnapshotRetainMax() + 1, earliest);
        long endExclusive = Math.min(latest - config.getSnapshotRetainMin() + 1, retainFrom);
        endExclusive = Math.min(endExclusive, consumers(table).minNextSnapshot().orElse(Long.MAX_VALUE));
        endExclusive = Math.min(endExclusive, earliest + config.getSnapshotMaxDeletes());
        for (long id = from; id < endExclusive; id++) {
            if (snapshots.snapshotExists(id) && olderThanMillis <= snapshots.snapshot(id).timeMillis()) {
                endExclusive = id; // this one and all later ones are young enough to stay
                break;
            }
        }
        if (endExclusive <= earliest) {
            return 0;
        }
        ExpireSnapshotsImpl expiry = (ExpireSnapshotsImpl) table.newExpireSnapshots().config(config);
        return expiry.expireUntil(earliest, endExclusive);
    }

    private static ConsumerManager consumers(FileStoreTable table) {
        return new ConsumerManager(table.fileIO(), table.location(), table.coreOptions().branch());
    }

    /** The table with commit-time snapshot expiry off (Paimon's commits expire by default). */
    static FileStoreTable withoutCommitExpiry(Table table) {
        String max = String.valueOf(Integer.MAX_VALUE);
        Map<String, String> options = new HashMap<>();
        options.put(CoreOptions.SNAPSHOT_NUM_RETAINED_MIN.key(), max);
        options.put(CoreOptions.SNAPSHOT_NUM_RETAINED_MAX.key(), max);
        options.put(CoreOptions.WRITE_ONLY.key(), "false");
        return (FileStoreTable) table.copy(options);
    }
}
