package org.fluss.py.flink.lake;

import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataTypes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Compaction and guarded snapshot expiry of {@link LakeMaintenance} on a real local Paimon table. */
class LakeMaintenanceTest {
    @TempDir Path warehouse;

    private FileStoreTable table(String name, boolean pk, Map<String, String> options) throws Exception {
        Options catalogOptions = new Options();
        catalogOptions.set("warehouse", warehouse.toString());
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(catalogOptions))) {
            catalog.createDatabase("db", true);
            Schema.Builder schema = Schema.newBuilder().column("id", DataTypes.BIGINT().notNull())
                    .column("v", DataTypes.STRING()).options(options);
            if (pk) {
                schema.primaryKey("id");
            }
            catalog.createTable(Identifier.create("db", name), schema.build(), false);
            return (FileStoreTable) catalog.getTable(Identifier.create("db", name));
        }
    }

    private static void commitRows(FileStoreTable table, long from, long to) throws Exception {
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite(); BatchTableCommit commit = builder.newCommit()) {
            for (long i = from; i < to; i++) {
                write.write(GenericRow.of(i, BinaryString.fromString("v" + i)));
            }
            commit.commit(write.prepareCommit());
        }
    }

    private static int files(FileStoreTable table) {
        int n = 0;
        for (Split s : table.newReadBuilder().newScan().plan().splits()) {
            n += ((DataSplit) s).dataFiles().size();
        }
        return n;
    }

    private static long rows(FileStoreTable table) throws Exception {
        long n = 0;
        var builder = table.newReadBuilder();
        try (var it = builder.newRead().createReader(builder.newScan().plan()).toCloseableIterator()) {
            while (it.hasNext()) {
                it.next();
                n++;
            }
        }
        return n;
    }

    @Test
    void compactionMergesTheWrittenBucketsAndKeepsEveryRow() throws Exception {
        FileStoreTable t = table("pk", true, Map.of("bucket", "1", "bucket-key", "id",
                "num-sorted-run.compaction-trigger", "2", "write-only", "true"));
        for (int round = 0; round < 4; round++) {
            commitRows(t, round * 10L, round * 10L + 15); // overlapping keys: updates across files
        }
        t = (FileStoreTable) t.copy(Map.of()); // see the latest snapshot
        int before = files(t);
        assertTrue(before >= 4, "one file per commit (writes were write-only): " + before);
        var result = LakeMaintenance.compact(t, List.of(List.of("", 0)));
        assertEquals(1, result.get("buckets"));
        assertNotNull(result.get("snapshot_id"));
        FileStoreTable after = (FileStoreTable) t.copy(Map.of());
        Snapshot latest = after.snapshotManager().latestSnapshot();
        assertEquals(Snapshot.CommitKind.COMPACT, latest.commitKind());
        assertTrue(latest.commitUser().startsWith(LakeMaintenance.COMMIT_USER_PREFIX));
        assertTrue(files(after) < before, files(after) + " files after compaction, " + before + " before");
        assertEquals(45, rows(after));
        // the compaction commit expired nothing, whatever the table's retention options
        assertEquals(1L, after.snapshotManager().earliestSnapshotId());
    }

    @Test
    void bucketUnawareAppendTablesAreCompactedByPaimonsCoordinator() throws Exception {
        FileStoreTable t = table("log", false, Map.of("bucket", "-1", "compaction.min.file-num", "2",
                "write-only", "true"));
        for (int round = 0; round < 4; round++) {
            commitRows(t, round * 10L, round * 10L + 10);
        }
        t = (FileStoreTable) t.copy(Map.of());
        int before = files(t);
        var result = LakeMaintenance.compact(t, List.of(List.of("", 0)));
        assertTrue((Integer) result.get("buckets") >= 1);
        FileStoreTable after = (FileStoreTable) t.copy(Map.of());
        assertTrue(files(after) < before, files(after) + " files after compaction, " + before + " before");
        assertEquals(40, rows(after));
    }

    @Test
    void expiryFollowsTheRetentionOptionsButKeepsTheCoordinatorsSnapshot() throws Exception {
        FileStoreTable t = table("exp", true, Map.of("bucket", "1", "bucket-key", "id",
                "snapshot.num-retained.min", "1", "snapshot.num-retained.max", "2", "snapshot.time-retained", "1 ms",
                "write-only", "true"));
        for (int round = 0; round < 6; round++) {
            commitRows(t, round, round + 1);
        }
        t = (FileStoreTable) t.copy(Map.of());
        assertEquals(6L, t.snapshotManager().latestSnapshotId());
        Thread.sleep(5);
        // the coordinator still reads snapshot 3: 3..6 stay although the options would keep only 2
        int expired = LakeMaintenance.expire(t, 3);
        List<Long> left = new ArrayList<>();
        t.snapshotManager().snapshots().forEachRemaining(s -> left.add(s.id()));
        assertEquals(List.of(3L, 4L, 5L, 6L), left, "expire returned " + expired);
        assertEquals(3L, t.snapshotManager().earliestSnapshotId());
        assertEquals(6, rows((FileStoreTable) t.copy(Map.of("scan.snapshot-id", "6"))));
        assertEquals(3, rows((FileStoreTable) t.copy(Map.of("scan.snapshot-id", "3"))));
        // once the coordinator moved to 6, the options decide: keep 1, the others are older than 1 ms
        assertTrue(LakeMaintenance.expire(t, 6) > 0);
        List<Long> ids = new ArrayList<>();
        t.snapshotManager().snapshots().forEachRemaining(s -> ids.add(s.id()));
        assertEquals(List.of(6L), ids);
        assertEquals(6, rows((FileStoreTable) t.copy(Map.of("scan.snapshot-id", "6"))));
    }

    @Test
    void expiryKeepsTheCoordinatorsSnapshotWhileTheNextRoundCommits() throws Exception {
        // The tiering job's next round commits while the last round's maintenance expires: the latest snapshot
        // moves on during expire(). Paimon's own expire() counts num-retained.min from the latest it reads then.
        FileStoreTable t = table("race", false, Map.of("bucket", "-1", "snapshot.num-retained.min", "1",
                "snapshot.num-retained.max", "2", "snapshot.time-retained", "1 ms", "write-only", "true"));
        commitRows(t, 0, 1);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> committerFailure = new AtomicReference<>();
        Thread committer = new Thread(() -> {
            try {
                for (long i = 1; !stop.get(); i++) {
                    commitRows(t, i, i + 1);
                }
            } catch (Throwable e) {
                committerFailure.set(e);
            }
        });
        committer.start();
        int expired = 0;
        try {
            for (int round = 0; round < 60; round++) {
                long coordinators = t.snapshotManager().latestSnapshotId();
                Thread.sleep(2);
                expired += LakeMaintenance.expire(t, coordinators);
                assertTrue(t.snapshotManager().snapshotExists(coordinators),
                        "round " + round + ": snapshot " + coordinators + " the coordinator names was expired");
            }
        } finally {
            stop.set(true);
            committer.join();
        }
        assertEquals(null, committerFailure.get());
        assertTrue(expired > 0, "the retention options expired nothing");
    }
}
