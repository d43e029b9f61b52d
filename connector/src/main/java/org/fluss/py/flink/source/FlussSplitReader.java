package org.fluss.py.flink.source;

import org.fluss.py.flink.client.ConnectionConfig;
import com.google.common.util.concurrent.ListenableFuture;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.connector.base.source.reader.RecordsBySplits;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsChange;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.columnar.ColumnarRowData;
import org.apache.flink.table.data.columnar.vector.VectorizedColumnBatch;
import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.FlussRpcException;
import org.fluss.py.flink.client.TableBucket;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.lake.LakeConfig;
import org.fluss.py.flink.lake.LakeRows;
import org.fluss.py.flink.lake.LakeTableReader;
import org.fluss.py.flink.record.EvolvingBatchReader;
import org.fluss.py.flink.record.LogBatch;
import org.fluss.py.flink.remote.RemoteLogReader;
import org.fluss.py.flink.remote.RemoteLogSettings;
import org.fluss.py.rpc.FetchBucketPb;
import org.fluss.py.rpc.FetchBucketResultPb;
import org.fluss.py.rpc.FetchLogRequest;
import org.fluss.py.rpc.FetchLogResponse;
import org.fluss.py.rpc.FetchTablePb;
import org.fluss.py.rpc.FetchTableResultPb;
import org.fluss.py.rpc.ScanKvRequest;
import org.fluss.py.rpc.ScanKvResponse;
import org.fluss.py.rpc.TableInfoPb;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;

/**
 * Fetches every assigned bucket: one FetchLog per bucket leader per round (sent in parallel), with the
 * column projection done by the tablet server. Records below a split's next offset (the first batch may start
 * earlier) and at or beyond its stopping offset are dropped; a bounded split finishes at its stopping offset.
 *
 * <p>A split with a lake part (Union Read) first hands out the rows of its Paimon splits (at most
 * {@link #LAKE_ROWS_PER_FETCH} per round) and then reads the log from the lake snapshot's offset. With
 * {@link ReadSpec#mergeLake} (primary-key tables in batch mode) the bucket's log tail {@code [start, stop)} is
 * read first into a map of the last change per key; then the lake rows whose key the tail does not touch are
 * handed out, followed by the tail's surviving rows (the log wins; a last -D removes the key).
 *
 * <p>A pushed-down LIMIT ({@link ReadSpec#limit}) finishes every split of this reader once that many rows were
 * handed out.
 *
 * <p>A fetch below the leader's local log start is answered with remote log segments (the tiered log): the split
 * reads them from remote storage itself ({@link RemoteLogReader}), decoding all columns and projecting here, and
 * goes back to the leader after the last one, so reading continues from the remote into the local log. Segments
 * hold the batches as stored: ARROW bodies, or the rows of an INDEXED / COMPACTED log, which
 * {@link EvolvingBatchReader} decodes with {@link org.fluss.py.flink.record.RowBodyReader}.
 */
public final class FlussSplitReader implements SplitReader<FlussRecord, FlussSplit> {
    /** Lake rows handed out per split per fetch: a round stays short, so checkpoint barriers get through. */
    static final int LAKE_ROWS_PER_FETCH = 8192;

    private final TablePath path;
    private final ReadSpec spec;
    private final int[] projection; // null = all columns
    private final int[] fetchProjection; // what FetchLog asks for (all columns when merging)
    private final int fetchMaxBytes;
    private final int fetchWaitMs;
    private final FlussClient client;
    private final BufferAllocator allocator = new RootAllocator();
    private EvolvingBatchReader reader; // batches of any schema id (ALTER TABLE ADD); created once the log format is known
    private boolean rowLog; // table.log.format is INDEXED or COMPACTED: batches come as Arrow, projected here
    private EvolvingBatchReader snapshotReader; // every column (ScanKv has no projection)
    private EvolvingBatchReader remoteBatchReader; // every column (remote segments hold the stored batches)
    private final RemoteLogSettings remoteSettings;
    private RemoteLogReader remote; // created at the first remote answer
    private LakeTableReader lakeTable; // opened for the first lake part
    private final Map<String, Active> active = new LinkedHashMap<>();
    private final List<String> finishedEarly = new ArrayList<>();
    private long emitted; // rows handed out (LIMIT)

    private static final class Active {
        final FlussSplit split;
        long nextOffset;
        boolean lakePending; // the lake part is not done yet
        long lakeRows; // rows of the lake part handed out (the checkpointed position)
        long lakeToSkip; // rows of the lake part emitted before a restore, skipped when it is reopened
        LakeRows lake; // the open lake part
        GenericRowData lookahead; // the next lake row (so the last one can end the lake part)
        Map<List<Object>, RowData> tail; // merge: the log tail's last change per key (null: deleted)
        Iterator<RowData> survivors; // merge: the tail's rows, handed out after the lake rows
        RowData pendingBefore; // $binlog: the -U image waiting for its +U

        Active(FlussSplit split, boolean merge) {
            this.split = split;
            this.nextOffset = split.startingOffset;
            this.lakePending = split.hasLake();
            this.lakeRows = split.lakeRowsEmitted;
            this.lakeToSkip = split.lakeRowsEmitted;
            this.tail = merge && split.hasLake() ? new LinkedHashMap<>() : null;
        }

        /** Merge: the log tail is still being read into {@link #tail}. */
        boolean collecting() {
            return tail != null && lakePending && nextOffset < split.stoppingOffset;
        }

        /** Lake rows are handed out now. */
        boolean readingLake() {
            return lakePending && !collecting();
        }

        boolean needsLog() {
            return nextOffset != FlussSplit.FROM_SNAPSHOT && (!lakePending || collecting());
        }

        boolean done() {
            return !lakePending && split.isBounded() && nextOffset != FlussSplit.FROM_SNAPSHOT
                    && nextOffset >= split.stoppingOffset;
        }

        void closeLake() throws IOException {
            if (lake != null) {
                lake.close();
                lake = null;
            }
        }
    }

    public FlussSplitReader(ConnectionConfig connection, TablePath path, ReadSpec spec, int fetchMaxBytes,
                            int fetchWaitMs) {
        this(connection, path, spec, fetchMaxBytes, fetchWaitMs, RemoteLogSettings.DEFAULT);
    }

    public FlussSplitReader(ConnectionConfig connection, TablePath path, ReadSpec spec, int fetchMaxBytes,
                            int fetchWaitMs, RemoteLogSettings remoteSettings) {
        this.remoteSettings = remoteSettings;
        this.path = path;
        this.spec = spec;
        this.projection = spec.projection;
        this.fetchProjection = spec.fetchProjection();
        this.fetchMaxBytes = fetchMaxBytes;
        this.fetchWaitMs = fetchWaitMs;
        this.client = new FlussClient(connection);
    }

    /**
     * Learns the table's log format on first use: a row-format log (INDEXED, COMPACTED) is fetched with
     * {@code as_arrow} (the tablet server re-encodes its batches as Arrow) and without server-side projection,
     * which only the ARROW format supports; the projection is then applied here.
     */
    private EvolvingBatchReader reader() {
        if (reader == null) {
            TableInfoPb info = client.tableInfo(path);
            String format = info.getDescriptorPb().getPropertiesMap().getOrDefault("table.log.format", "ARROW");
            rowLog = !"ARROW".equalsIgnoreCase(format.trim());
            TableInfoPb[] fetched = {info}; // the reader's first look at the table: this answer, not a second call
            reader = new EvolvingBatchReader(spec.tableType, rowLog ? null : spec.fetchProjection(), () -> {
                TableInfoPb first = fetched[0];
                fetched[0] = null;
                return first != null ? first : client.tableInfo(path);
            }, allocator);
        }
        return reader;
    }

    private boolean limitReached() {
        return spec.limit > 0 && emitted >= spec.limit;
    }

    @Override
    public void handleSplitsChanges(SplitsChange<FlussSplit> change) {
        if (!(change instanceof SplitsAddition)) {
            throw new UnsupportedOperationException("Unsupported splits change " + change);
        }
        for (FlussSplit s : change.splits()) {
            Active a = new Active(s, spec.mergeLake);
            if (a.done() || limitReached()) {
                finishedEarly.add(s.splitId());
            } else {
                active.put(s.splitId(), a);
            }
        }
    }

    /** Finishes every split (the LIMIT is reached). */
    private void finishAll(RecordsBySplits.Builder<FlussRecord> out) throws IOException {
        for (Active a : active.values()) {
            a.closeLake();
            out.addFinishedSplit(a.split.splitId());
        }
        active.clear();
    }

    private void finishIfDone(Active a, RecordsBySplits.Builder<FlussRecord> out) throws IOException {
        if (a.done()) {
            a.closeLake();
            if (remote != null) {
                remote.drop(a.split.splitId());
            }
            out.addFinishedSplit(a.split.splitId());
            active.remove(a.split.splitId());
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
        boolean gotRows = false;
        for (Active a : new ArrayList<>(active.values())) {
            if (limitReached()) {
                break;
            }
            if (a.nextOffset == FlussSplit.FROM_SNAPSHOT) {
                gotRows |= readSnapshot(a, out);
            } else if (a.readingLake()) {
                gotRows |= readLake(a, out);
            }
            finishIfDone(a, out);
        }
        if (limitReached()) {
            finishAll(out);
            return out.build();
        }
        if (gotRows || active.isEmpty()) {
            return out.build(); // emit the snapshot / lake rows before the first log fetch
        }
        reader(); // the log format decides how to fetch
        boolean gotRemote = false;
        for (Active a : new ArrayList<>(active.values())) {
            if (remote != null && remote.has(a.split.splitId()) && a.needsLog() && !limitReached()) {
                gotRemote |= readRemote(a, gotRemote ? 0 : fetchWaitMs, out);
                finishIfDone(a, out);
            }
        }
        if (limitReached()) {
            finishAll(out);
            return out.build();
        }
        // group by leader
        Map<Integer, List<Active>> byLeader = new HashMap<>();
        boolean missingLeader = false;
        for (Active a : active.values()) {
            if (!a.needsLog()) {
                missingLeader = true; // its ScanKv failed this round (retried next round), or its lake part waits
                continue;
            }
            if (remote != null && remote.has(a.split.splitId())) {
                continue; // read from remote storage above
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
                    FetchTablePb.Builder b = FetchTablePb.newBuilder().setTableId(id).setAsArrow(true);
                    if (fetchProjection != null && !rowLog) {
                        b.setProjectionEnabled(true);
                        for (int p : fetchProjection) {
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
            int requestError = resp.getError().getCode();
            if (requestError != 0) { // the whole request failed (e.g. the server could not decode it)
                if (!FlussRpcException.isRetriable(requestError)) {
                    throw new IOException(new FlussRpcException(requestError, "Fetching " + path + ": "
                            + resp.getError().getMessage()));
                }
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
                    if (b.hasRemoteLogFetchInfo()) { // below the local log: read these segments from remote storage
                        remoteReader().add(a.split.splitId(), b.getRemoteLogFetchInfo());
                        gotData |= readRemote(a, fetchWaitMs, out);
                        finishIfDone(a, out);
                        continue;
                    }
                    gotData |= consume(a, b.getRecords().toByteArray(), out);
                    finishIfDone(a, out);
                }
            }
        }
        if (limitReached()) {
            finishAll(out);
        }
        if (!gotData && !gotRemote && (missingLeader || calls.isEmpty())) {
            FlussClient.sleep(100);
        }
        return out.build();
    }

    private RemoteLogReader remoteReader() {
        if (remote == null) {
            remote = new RemoteLogReader(remoteSettings, client::fileSystemOptions);
        }
        return remote;
    }

    /** One chunk of the split's current remote segment (waiting up to {@code waitMs} for its download). */
    private boolean readRemote(Active a, long waitMs, RecordsBySplits.Builder<FlussRecord> out) throws IOException {
        RemoteLogReader.Chunk chunk;
        try {
            chunk = remote.read(a.split.splitId(), waitMs);
        } catch (IOException e) {
            throw new IOException("Reading the remote log of " + path + " " + a.split.bucket + ": " + e.getMessage(), e);
        }
        if (chunk == null) {
            return false;
        }
        if (remoteBatchReader == null) { // remote segments hold the stored, unprojected batches of any schema id:
            // ARROW bodies, or INDEXED / COMPACTED rows (decoded here: only FetchLog re-encodes those as Arrow)
            remoteBatchReader = new EvolvingBatchReader(spec.tableType, null, () -> client.tableInfo(path), allocator);
        }
        boolean any;
        try {
            any = consume(a, chunk.data(), out, remoteBatchReader, fetchProjection);
        } catch (IllegalStateException e) {
            throw new IOException("Reading the remote log of " + path + " " + a.split.bucket + ": " + e.getMessage(), e);
        }
        if (chunk.segmentEnd() >= 0 && !a.done()) {
            long end = a.split.isBounded() ? Math.min(chunk.segmentEnd(), a.split.stoppingOffset) : chunk.segmentEnd();
            a.nextOffset = Math.max(a.nextOffset, end);
        }
        return any;
    }

    private boolean consume(Active a, byte[] records, RecordsBySplits.Builder<FlussRecord> out) {
        return consume(a, records, out, reader(), rowLog ? fetchProjection : null);
    }

    /**
     * Rows of the batches from the split's offset on, decoded by {@code batchReader} (batches of any schema id);
     * {@code project} (or null) applies the fetch projection the tablet server did not.
     */
    private boolean consume(Active a, byte[] records, RecordsBySplits.Builder<FlussRecord> out,
                            EvolvingBatchReader batchReader, int[] project) {
        if (records.length == 0) {
            return false;
        }
        boolean any = false;
        boolean collecting = a.collecting();
        // rows handed out as they are read: columnar views over the batch (no GenericRowData per row)
        boolean plain = project == null && !collecting && !spec.binlog && !spec.changelog;
        String id = a.split.splitId();
        for (LogBatch.View batch : LogBatch.parse(records)) {
            if (batch.nextOffset() <= a.nextOffset) {
                continue;
            }
            batch.ensureValid();
            int first = (int) Math.max(0, a.nextOffset - batch.baseOffset);
            VectorizedColumnBatch columns = plain ? batchReader.readColumnar(batch) : null;
            List<RowData> rows = null;
            int count;
            if (columns != null) {
                count = Math.max(0, columns.getNumRows() - first);
            } else {
                rows = batchReader.read(batch, first);
                if (project != null) {
                    rows.replaceAll(row -> ReadSpec.project(row, project));
                }
                count = rows.size();
            }
            byte[] changeTypes = batch.changeTypes();
            long offset = batch.baseOffset + first;
            for (int k = 0; k < count; k++) {
                RowData row = columns != null ? new ColumnarRowData(columns, first + k) : rows.get(k);
                if (a.split.isBounded() && offset >= a.split.stoppingOffset) {
                    break;
                }
                byte type = changeTypes == null ? 0 : changeTypes[(int) (offset - batch.baseOffset)];
                if (collecting) {
                    collect(a, row, type);
                } else if (spec.binlog) {
                    if (type == 2) { // -U: emitted with the +U that follows (the position stays before it)
                        a.pendingBefore = row;
                    } else {
                        if (limitReached()) {
                            break;
                        }
                        String kind = type == 3 ? "update" : type == 4 ? "delete" : "insert";
                        RowData before = type == 3 ? a.pendingBefore : type == 4 ? row : null;
                        a.pendingBefore = null;
                        out.add(id, new FlussRecord(spec.binlogRow(kind, before, type == 4 ? null : row, offset,
                                batch.commitTimestamp), offset, batch.commitTimestamp));
                        emitted++;
                    }
                } else {
                    if (limitReached()) {
                        break;
                    }
                    out.add(id, new FlussRecord(spec.fromLog(row, type, offset, batch.commitTimestamp), offset,
                            batch.commitTimestamp));
                    emitted++;
                }
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

    /** Merge: one change of the log tail (-U is skipped: the +U after it carries the new row). */
    private void collect(Active a, RowData row, byte changeType) {
        if (changeType == 2) {
            return;
        }
        List<Object> key = spec.key(row);
        a.tail.remove(key); // the order of the survivors: by their last change
        a.tail.put(key, changeType == 4 ? null : row);
    }

    private LakeTableReader lakeTable() throws IOException {
        if (lakeTable == null) {
            try {
                lakeTable = new LakeTableReader(LakeConfig.catalogOptions(client.tableInfo(path)), path);
            } catch (NoClassDefFoundError e) {
                throw new IOException(LakeConfig.paimonMissing(e));
            }
        }
        return lakeTable;
    }

    /**
     * Hands out up to {@link #LAKE_ROWS_PER_FETCH} rows of a split's lake part (after the rows a restore skips).
     * Without merging, the last lake row moves the split to its log ({@link FlussRecord#LAKE_DONE}); with
     * merging, the split ends after the merged rows. Returns whether rows were added.
     */
    private boolean readLake(Active a, RecordsBySplits.Builder<FlussRecord> out) throws IOException {
        boolean merge = a.tail != null;
        if (a.lake == null) {
            a.lake = lakeTable().open(merge ? spec.tableType : spec.readType(), a.split.lakeSplits);
            if (!merge) {
                a.lake.skip(a.lakeToSkip);
                a.lakeToSkip = 0;
                a.lookahead = a.lake.next();
            }
        }
        String id = a.split.splitId();
        int n = 0;
        while (n < LAKE_ROWS_PER_FETCH && !limitReached()) {
            RowData row;
            long nextLakeRows;
            if (merge) {
                row = nextMerged(a);
                if (row == null) {
                    break;
                }
                if (a.lakeToSkip > 0) {
                    a.lakeToSkip--;
                    continue;
                }
                row = ReadSpec.project(row, projection);
                nextLakeRows = a.lakeRows + 1;
            } else {
                row = a.lookahead;
                if (row == null) {
                    break;
                }
                a.lookahead = a.lake.next();
                nextLakeRows = a.lookahead == null ? FlussRecord.LAKE_DONE : a.lakeRows + 1;
            }
            a.lakeRows++;
            out.add(id, new FlussRecord(row, -1L, 0L, a.split.startingOffset, nextLakeRows));
            emitted++;
            n++;
        }
        boolean finished = merge ? a.survivors != null && !a.survivors.hasNext() : a.lookahead == null;
        if (finished && !limitReached()) {
            a.closeLake();
            a.lakePending = false;
            a.nextOffset = merge ? Math.max(a.nextOffset, a.split.stoppingOffset) : a.split.startingOffset;
        }
        return n > 0;
    }

    /** Merge: the next lake row whose key the log tail does not touch, then the tail's surviving rows. */
    private RowData nextMerged(Active a) throws IOException {
        if (a.survivors == null) {
            GenericRowData r;
            while ((r = a.lake.next()) != null) {
                if (!a.tail.containsKey(spec.key(r))) {
                    return r;
                }
            }
            a.survivors = a.tail.values().stream().filter(Objects::nonNull).iterator();
        }
        return a.survivors.hasNext() ? a.survivors.next() : null;
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
            int limit = spec.limit > 0 ? (int) Math.min(Integer.MAX_VALUE, spec.limit - emitted) : 0;
            r = FlussClient.call(() -> client.tablet(leader).scanKv(ScanKvRequest.newBuilder().setTableId(tb.tableId)
                    .setPartitionId(tb.partitionId).setBucketId(tb.bucket).setLimit(limit).build()), "ScanKv");
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
                snapshotReader = new EvolvingBatchReader(spec.tableType, null, () -> client.tableInfo(path), allocator);
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
        emitted += rows.size();
        a.nextOffset = logOffset;
        return !rows.isEmpty();
    }

    @Override
    public void wakeUp() {
        // a fetch round is bounded by fetch.wait-max-time
    }

    @Override
    public void close() throws IOException {
        try {
            for (Active a : active.values()) {
                a.closeLake();
            }
        } finally {
            client.close(); // first: its threads must not outlive the job, whatever fails below
            if (remote != null) {
                remote.close();
            }
            if (reader != null) {
                reader.close();
            }
            if (remoteBatchReader != null) {
                remoteBatchReader.close();
            }
            if (snapshotReader != null) {
                snapshotReader.close();
            }
            allocator.close();
        }
    }

}
