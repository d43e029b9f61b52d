package org.fluss.py.flink.source;

import com.google.common.util.concurrent.ListenableFuture;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.connector.base.source.reader.RecordsBySplits;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsChange;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.FlussRpcException;
import org.fluss.py.flink.client.TableBucket;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.record.ArrowBatchReader;
import org.fluss.py.flink.record.LogBatch;
import org.fluss.py.rpc.FetchBucketPb;
import org.fluss.py.rpc.FetchBucketResultPb;
import org.fluss.py.rpc.FetchLogRequest;
import org.fluss.py.rpc.FetchLogResponse;
import org.fluss.py.rpc.FetchTablePb;
import org.fluss.py.rpc.FetchTableResultPb;
import org.fluss.py.rpc.ScanKvRequest;
import org.fluss.py.rpc.ScanKvResponse;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

/**
 * Fetches every assigned bucket: one FetchLog per bucket leader per round (sent in parallel), with the
 * column projection done by the tablet server. Records below a split's next offset (the first batch may start
 * earlier) and at or beyond its stopping offset are dropped; a bounded split finishes at its stopping offset.
 */
public final class FlussSplitReader implements SplitReader<FlussRecord, FlussSplit> {
    private final TablePath path;
    private final ReadSpec spec;
    private final int[] projection; // null = all columns
    private final int fetchMaxBytes;
    private final int fetchWaitMs;
    private final FlussClient client;
    private final BufferAllocator allocator = new RootAllocator();
    private final ArrowBatchReader reader;
    private ArrowBatchReader snapshotReader; // every column (ScanKv has no projection)
    private final Map<String, Active> active = new LinkedHashMap<>();
    private final List<String> finishedEarly = new ArrayList<>();

    private static final class Active {
        final FlussSplit split;
        long nextOffset;

        Active(FlussSplit split) {
            this.split = split;
            this.nextOffset = split.startingOffset;
        }

        boolean done() {
            return split.isBounded() && nextOffset != FlussSplit.FROM_SNAPSHOT && nextOffset >= split.stoppingOffset;
        }
    }

    public FlussSplitReader(String bootstrapServers, TablePath path, ReadSpec spec, int fetchMaxBytes,
                            int fetchWaitMs) {
        this.path = path;
        this.spec = spec;
        this.projection = spec.projection;
        this.fetchMaxBytes = fetchMaxBytes;
        this.fetchWaitMs = fetchWaitMs;
        this.client = new FlussClient(bootstrapServers);
        this.reader = new ArrowBatchReader(spec.readType(), allocator);
    }

    @Override
    public void handleSplitsChanges(SplitsChange<FlussSplit> change) {
        if (!(change instanceof SplitsAddition)) {
            throw new UnsupportedOperationException("Unsupported splits change " + change);
        }
        for (FlussSplit s : change.splits()) {
            Active a = new Active(s);
            if (a.done()) {
                finishedEarly.add(s.splitId());
            } else {
                active.put(s.splitId(), a);
            }
        }
    }

    @Override
    public RecordsWithSplitIds<FlussRecord> fetch() throws IOException {
        RecordsBySplits.Builder<FlussRecord> out = new RecordsBySplits.Builder<>();
        for (String id : finishedEarly) {
            out.addFinishedSplit(id);
        }
        finishedEarly.clear();
        if (active.isEmpty()) {
            return out.build();
        }
        boolean gotSnapshot = false;
        for (Active a : new ArrayList<>(active.values())) {
            if (a.nextOffset == FlussSplit.FROM_SNAPSHOT) {
                gotSnapshot |= readSnapshot(a, out);
                if (a.done()) {
                    out.addFinishedSplit(a.split.splitId());
                    active.remove(a.split.splitId());
                }
            }
        }
        if (gotSnapshot || active.isEmpty()) {
            return out.build(); // emit the snapshot rows before the first changelog fetch
        }
        // group by leader
        Map<Integer, List<Active>> byLeader = new HashMap<>();
        boolean missingLeader = false;
        for (Active a : active.values()) {
            if (a.nextOffset == FlussSplit.FROM_SNAPSHOT) {
                missingLeader = true; // its ScanKv failed this round; retried next round
                continue;
            }
            int leader;
            try {
                leader = client.leader(path, a.split.bucket);
            } catch (FlussRpcException e) {
                if (!e.isRetriable()) {
                    throw new IOException(e);
                }
                leader = -1;
            }
            if (leader < 0) {
                missingLeader = true;
                continue;
            }
            byLeader.computeIfAbsent(leader, k -> new ArrayList<>()).add(a);
        }
        Map<Integer, ListenableFuture<FetchLogResponse>> calls = new HashMap<>();
        for (Map.Entry<Integer, List<Active>> e : byLeader.entrySet()) {
            Map<Long, FetchTablePb.Builder> tables = new HashMap<>();
            for (Active a : e.getValue()) {
                FetchTablePb.Builder t = tables.computeIfAbsent(a.split.bucket.tableId, id -> {
                    FetchTablePb.Builder b = FetchTablePb.newBuilder().setTableId(id);
                    if (projection != null) {
                        b.setProjectionEnabled(true);
                        for (int p : projection) {
                            b.addProjectedFields(p);
                        }
                    }
                    return b;
                });
                t.addBuckets(FetchBucketPb.newBuilder().setPartitionId(a.split.bucket.partitionId)
                        .setBucketId(a.split.bucket.bucket).setFetchOffset(a.nextOffset).setMaxBytes(fetchMaxBytes));
            }
            FetchLogRequest.Builder req = FetchLogRequest.newBuilder().setFollowerId(-1).setMaxBytes(fetchMaxBytes)
                    .setMinBytes(1).setMaxWaitMs(fetchWaitMs);
            tables.values().forEach(req::addTables);
            try {
                calls.put(e.getKey(), client.tabletAsync(e.getKey()).fetchLog(req.build()));
            } catch (FlussRpcException ex) {
                e.getValue().forEach(a -> client.invalidate(a.split.bucket));
            }
        }
        boolean gotData = false;
        for (Map.Entry<Integer, ListenableFuture<FetchLogResponse>> call : calls.entrySet()) {
            FetchLogResponse resp;
            try {
                resp = call.getValue().get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("Interrupted while fetching " + path, e);
            } catch (ExecutionException e) { // transport failure: refresh leaders, retry next round
                byLeader.get(call.getKey()).forEach(a -> client.invalidate(a.split.bucket));
                continue;
            }
            for (FetchTableResultPb t : resp.getTablesList()) {
                for (FetchBucketResultPb b : t.getBucketsList()) {
                    TableBucket tb = new TableBucket(t.getTableId(), b.getPartitionId(), b.getBucketId());
                    Active a = active.get(tb.toString());
                    if (a == null) {
                        continue;
                    }
                    int code = b.getError().getCode();
                    if (code != 0) {
                        if (FlussRpcException.isRetriable(code)) {
                            client.invalidate(tb);
                            continue;
                        }
                        throw new IOException(new FlussRpcException(code, "Fetching " + path + " " + tb + " at offset "
                                + a.nextOffset + ": " + b.getError().getMessage()));
                    }
                    gotData |= consume(a, b.getRecords().toByteArray(), out);
                    if (a.done()) {
                        out.addFinishedSplit(a.split.splitId());
                        active.remove(a.split.splitId());
                    }
                }
            }
        }
        if (!gotData && (missingLeader || calls.isEmpty())) {
            FlussClient.sleep(100);
        }
        return out.build();
    }

    private boolean consume(Active a, byte[] records, RecordsBySplits.Builder<FlussRecord> out) {
        if (records.length == 0) {
            return false;
        }
        boolean any = false;
        String id = a.split.splitId();
        for (LogBatch.View batch : LogBatch.parse(records)) {
            if (batch.nextOffset() <= a.nextOffset) {
                continue;
            }
            batch.ensureValid();
            int first = (int) Math.max(0, a.nextOffset - batch.baseOffset);
            List<RowData> rows = reader.read(batch, first);
            byte[] changeTypes = batch.changeTypes();
            long offset = batch.baseOffset + first;
            for (RowData row : rows) {
                if (a.split.isBounded() && offset >= a.split.stoppingOffset) {
                    break;
                }
                byte type = changeTypes == null ? 0 : changeTypes[(int) (offset - batch.baseOffset)];
                out.add(id, new FlussRecord(spec.fromLog(row, type, offset, batch.commitTimestamp), offset,
                        batch.commitTimestamp));
                offset++;
                any = true;
            }
            a.nextOffset = a.split.isBounded() ? Math.min(batch.nextOffset(), a.split.stoppingOffset)
                    : batch.nextOffset();
            if (a.done()) {
                break;
            }
        }
        return any;
    }

    /**
     * Reads the KV snapshot of a primary-key bucket (ScanKv on its leader) as INSERT rows; the last row moves the
     * split to the snapshot's log offset (so a checkpoint taken during the snapshot restarts it). Returns whether
     * rows were added; a retriable error leaves the split for the next round.
     */
    private boolean readSnapshot(Active a, RecordsBySplits.Builder<FlussRecord> out) throws IOException {
        TableBucket tb = a.split.bucket;
        ScanKvResponse r;
        try {
            int leader = client.leader(path, tb);
            if (leader < 0) {
                return false;
            }
            r = FlussClient.call(() -> client.tablet(leader).scanKv(ScanKvRequest.newBuilder().setTableId(tb.tableId)
                    .setPartitionId(tb.partitionId).setBucketId(tb.bucket).build()), "ScanKv");
            if (r.getError().getCode() != 0) {
                throw new FlussRpcException(r.getError().getCode(), "ScanKv of " + path + " " + tb + ": "
                        + r.getError().getMessage());
            }
        } catch (FlussRpcException e) {
            if (!e.isRetriable()) {
                throw new IOException(e);
            }
            client.invalidate(tb);
            return false;
        }
        long logOffset = r.getLogOffset();
        List<RowData> rows = new ArrayList<>();
        byte[] data = r.getRows().toByteArray();
        if (data.length > 0) {
            if (snapshotReader == null) {
                snapshotReader = new ArrowBatchReader(spec.tableType, allocator);
            }
            for (LogBatch.View batch : LogBatch.parse(data)) {
                rows.addAll(snapshotReader.read(batch, 0));
            }
        }
        String id = a.split.splitId();
        for (int i = 0; i < rows.size(); i++) {
            RowData row = ReadSpec.project(rows.get(i), projection);
            boolean last = i == rows.size() - 1;
            out.add(id, new FlussRecord(row, FlussSplit.FROM_SNAPSHOT, 0L, last ? logOffset : FlussSplit.FROM_SNAPSHOT));
        }
        a.nextOffset = logOffset;
        return !rows.isEmpty();
    }

    @Override
    public void wakeUp() {
        // a fetch round is bounded by fetch.wait-max-time
    }

    @Override
    public void close() {
        reader.close();
        if (snapshotReader != null) {
            snapshotReader.close();
        }
        allocator.close();
        client.close();
    }
}
