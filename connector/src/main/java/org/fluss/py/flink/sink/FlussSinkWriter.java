package org.fluss.py.flink.sink;

import org.fluss.py.flink.client.ConnectionConfig;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.fluss.py.flink.catalog.FlinkConversions;
import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.FlussRpcException;
import org.fluss.py.flink.client.SharedClients;
import org.fluss.py.flink.client.TableBucket;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.key.BucketingFunction;
import org.fluss.py.flink.key.PartitionNames;
import org.fluss.py.flink.record.ArrowBatchWriter;
import org.fluss.py.flink.record.LogBatch;
import org.fluss.py.rpc.CreatePartitionRequest;
import org.fluss.py.rpc.InitWriterRequest;
import org.fluss.py.rpc.InitWriterResponse;
import org.fluss.py.rpc.ListPartitionInfosRequest;
import org.fluss.py.rpc.ListPartitionInfosResponse;
import org.fluss.py.rpc.PartitionInfoPb;
import org.fluss.py.rpc.ProduceBucketPb;
import org.fluss.py.rpc.ProduceBucketResultPb;
import org.fluss.py.rpc.ProduceLogRequest;
import org.fluss.py.rpc.PutKvBucketPb;
import org.fluss.py.rpc.PutKvRequest;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import org.fluss.py.rpc.TableDescriptorPb;
import org.fluss.py.rpc.TableInfoPb;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes rows to a Fluss table. A primary-key table gets KV batches through PutKv: INSERT / UPDATE_AFTER rows
 * are upserts (+U), DELETE rows deletes (-D, dropped with {@code sink.ignore-delete}), UPDATE_BEFORE rows are
 * ignored (the upsert that follows replaces the row); rows are routed by the bucket key (default: the primary
 * key minus the partition keys) and a partial update sends its target columns. A log table: Each row goes to a bucket — the bucket function over the bucket key's
 * key encoding (the same bytes as the Python client) when the table has a bucket key, else sticky (one bucket
 * per batch) or round-robin — and is appended to that bucket's Arrow buffer. Full buffers become log
 * batches; batches are sent in rounds, one ProduceLog per leader in parallel, retriable errors resent with
 * the same writer id and sequence (so the server drops duplicates); UNKNOWN_WRITER_ID (the leader forgot the
 * writer) restarts the bucket's sequences at 0. {@link #flush} sends everything and
 * waits, which Flink calls before each checkpoint barrier and at the end of input.
 */
public class FlussSinkWriter implements SinkWriter<RowData> {
    static final byte CHANGE_UPSERT = 3;
    static final byte CHANGE_DELETE = 4;
    /**
     * Batches of one bucket in one request: the server keeps the last 5 batches of a writer per bucket to
     * recognise a resent request, so a whole resent request is always recognised.
     */
    static final int MAX_BATCHES_PER_REQUEST = 4;

    private final TablePath path;
    private final RowType rowType;
    private final SinkSettings settings;
    private final SharedClients.Lease lease; // the JVM's client of this connection, shared with other writers
    private final FlussClient client;
    private final BufferAllocator allocator = new RootAllocator();

    private long tableId;
    private int schemaId;
    private int numBuckets;
    private int compression;
    private int zstdLevel;
    private BucketingFunction bucketing; // the table's bucket function over its bucket key; null: no bucket key
    private PartitionNames partitions; // null: not partitioned
    private long writerId = LogBatch.NO_WRITER_ID;
    private boolean kv; // primary-key table: PutKv
    private final int[] targetColumns; // partial update (null = all columns)
    private long roundRobin;
    private final Map<String, Integer> stickyBucket = new HashMap<>();

    private final Map<String, Long> partitionIds = new HashMap<>();
    // each partition's own bucket count (ALTER TABLE SET bucket.num changes the count of later partitions only)
    private final Map<Long, Integer> partitionBuckets = new HashMap<>();
    private final Map<TableBucket, ArrowBatchWriter> buffers = new LinkedHashMap<>();
    private final Map<TableBucket, ArrayDeque<byte[]>> ready = new LinkedHashMap<>();
    private final Map<TableBucket, Integer> nextSequence = new HashMap<>();
    private final ArrayDeque<Call> inFlight = new ArrayDeque<>(); // oldest first
    private final Set<TableBucket> busy = new HashSet<>(); // buckets with a request in flight
    private long pendingBytes; // sealed batches not acknowledged yet (ready or in flight)
    private int failures; // failed attempts in a row
    // the bucket of the previous row and its buffer (rows mostly go to the same bucket: sticky, or one partition)
    private TableBucket lastBucket;
    private ArrowBatchWriter lastBuffer;

    public FlussSinkWriter(ConnectionConfig connection, TablePath path, RowType rowType, SinkSettings settings,
                           int subtask) {
        this(connection, path, rowType, settings, subtask, null);
    }

    public FlussSinkWriter(ConnectionConfig connection, TablePath path, RowType rowType, SinkSettings settings,
                           int subtask, int[] targetColumns) {
        this.targetColumns = targetColumns;
        this.path = path;
        this.rowType = rowType;
        this.settings = settings;
        this.lease = SharedClients.acquire(connection);
        this.client = lease.client();
        this.roundRobin = ThreadLocalRandom.current().nextInt(1 << 16) + subtask;
        try {
            open();
        } catch (RuntimeException e) {
            lease.close();
            throw e;
        }
    }

    /**
     * The schema id this sink writes with: the table's latest, or (a job planned before an ALTER TABLE ADD) the
     * older schema id whose columns are exactly the sink's; the server reads such batches with the added
     * columns null.
     */
    private int schemaIdOf(TableInfoPb info, RowType tableType) {
        int n = rowType.getFieldCount();
        List<String> names = tableType.getFieldNames();
        if (n == tableType.getFieldCount()) {
            return info.getSchemaId();
        }
        List<Integer> counts = info.getSchemaColumnCountsList();
        if (n < tableType.getFieldCount() && names.subList(0, n).equals(rowType.getFieldNames())) {
            for (int id = counts.size(); id >= 1; id--) {
                if (counts.get(id - 1) == n) {
                    return id;
                }
            }
        }
        throw new IllegalStateException("Table " + path + " has " + tableType.getFieldCount() + " columns "
                + names + " but the Flink sink has " + n + " " + rowType.getFieldNames());
    }

    /**
     * Reads the table's info, gets a writer id (InitWriter) and the table's leaders (GetMetadata): three independent
     * coordinator calls, sent at the same time (the sink's set-up is on the job's critical path: in batch mode the
     * writers start only after their input is complete).
     */
    private void open() {
        CompletableFuture<InitWriterResponse> init = !settings.idempotence ? null : client.supplyAsync(() ->
                client.adminCall(a -> a.initWriter(InitWriterRequest.getDefaultInstance()), "InitWriter"));
        CompletableFuture<Void> metadata = client.supplyAsync(() -> {
            client.updateMetadata(path, null);
            return null;
        });
        TableInfoPb info = client.tableInfo(path);
        TableDescriptorPb d = info.getDescriptorPb();
        kv = d.getSchema().getPrimaryKeysCount() > 0;
        if (targetColumns != null && !kv) {
            throw new IllegalStateException("Table " + path + " is a log table: a partial INSERT (a subset of "
                    + "columns) needs a primary-key table");
        }
        RowType tableType = FlinkConversions.rowType(info);
        tableId = info.getTableId();
        schemaId = schemaIdOf(info, tableType);
        numBuckets = d.getBucketCount();
        String comp = d.getPropertiesMap().getOrDefault("table.log.arrow.compression.type", "ZSTD").toUpperCase();
        compression = comp.equals("NONE") ? LogBatch.COMPRESSION_NONE
                : comp.startsWith("LZ4") ? LogBatch.COMPRESSION_LZ4_FRAME : LogBatch.COMPRESSION_ZSTD;
        zstdLevel = Integer.parseInt(d.getPropertiesMap().getOrDefault("table.log.arrow.compression.zstd.level",
                "3"));
        List<String> names = rowType.getFieldNames();
        List<LogicalType> types = rowType.getChildren();
        if (d.getBucketKeysCount() > 0) {
            bucketing = BucketingFunction.of(d.getPropertiesMap(), types, positions(names, d.getBucketKeysList()));
        } else if (kv) { // default bucket key of a primary-key table: the primary key minus the partition keys
            List<String> keys = new ArrayList<>(d.getSchema().getPrimaryKeysList());
            keys.removeAll(d.getPartitionKeysList());
            bucketing = BucketingFunction.of(d.getPropertiesMap(), types, positions(names, keys));
        }
        if (d.getPartitionKeysCount() > 0) {
            partitions = new PartitionNames(names, types, positions(names, d.getPartitionKeysList()));
        }
        if (init != null) {
            InitWriterResponse r = join(init);
            FlussRpcException.check(r.getError(), "InitWriter for " + path);
            writerId = r.getWriterId();
        }
        join(metadata);
    }

    /** The result of a call sent with {@link FlussClient#supplyAsync}, its failure thrown as the call threw it. */
    private static <T> T join(CompletableFuture<T> call) {
        try {
            return call.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException) {
                throw (RuntimeException) e.getCause();
            }
            if (e.getCause() instanceof Error) {
                throw (Error) e.getCause();
            }
            throw e;
        }
    }

    private int[] positions(List<String> names, List<String> keys) {
        int[] out = new int[keys.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = names.indexOf(keys.get(i));
            if (out[i] < 0) {
                throw new IllegalStateException("Key column '" + keys.get(i) + "' of table " + path
                        + " is not in the sink's columns " + names);
            }
        }
        return out;
    }

    @Override
    public void write(RowData row, Context context) throws IOException {
        byte changeType = 0;
        if (kv) {
            switch (row.getRowKind()) {
                case UPDATE_BEFORE:
                    return; // the UPDATE_AFTER that follows replaces the row
                case DELETE:
                    if (settings.ignoreDelete) {
                        return;
                    }
                    changeType = CHANGE_DELETE;
                    break;
                default:
                    changeType = CHANGE_UPSERT;
            }
        } else if (row.getRowKind() != RowKind.INSERT && row.getRowKind() != RowKind.UPDATE_AFTER) {
            if (row.getRowKind() == RowKind.DELETE && settings.ignoreDelete) {
                return;
            }
            throw new IOException("Log table " + path + " is append-only: cannot apply a " + row.getRowKind()
                    + " row (updates and deletes need a primary-key table)");
        }
        long partitionId = TableBucket.NO_PARTITION;
        String partition = null;
        if (partitions != null) {
            partition = partitions.name(row);
            partitionId = partitionId(partition, row);
        }
        int n = partitionId == TableBucket.NO_PARTITION ? numBuckets
                : partitionBuckets.getOrDefault(partitionId, numBuckets);
        int bucket;
        if (bucketing != null) {
            bucket = bucketing.bucket(row, n);
        } else if (settings.roundRobin) {
            bucket = (int) (roundRobin++ % n);
        } else {
            bucket = stickyBucket.computeIfAbsent(partition == null ? "" : partition,
                    k -> (int) (roundRobin++ % n));
        }
        TableBucket tb = lastBucket;
        ArrowBatchWriter buf = lastBuffer;
        if (tb == null || tb.bucket != bucket || tb.partitionId != partitionId) {
            tb = new TableBucket(tableId, partitionId, bucket);
            buf = buffers.computeIfAbsent(tb, k -> new ArrowBatchWriter(rowType, allocator, compression, zstdLevel,
                    settings.batchRows, settings.minCompressedBytes));
            lastBucket = tb;
            lastBuffer = buf;
        }
        if (kv) {
            buf.write(row, changeType);
        } else {
            buf.write(row);
        }
        if (buf.rowCount() >= settings.batchRows) {
            seal(tb, buf);
            if (bucketing == null && !settings.roundRobin) { // sticky: move on after a full batch
                stickyBucket.put(partition == null ? "" : partition, (int) (roundRobin++ % n));
            }
            pump();
        }
    }

    private long partitionId(String name, RowData row) throws IOException {
        Long id = partitionIds.get(name);
        if (id != null) {
            return id;
        }
        refreshPartitions();
        id = partitionIds.get(name);
        if (id == null) {
            if (!settings.dynamicCreatePartition) {
                throw new IOException("Partition '" + name + "' of table " + path + " does not exist and "
                        + "client.writer.dynamic-create-partition.enabled is false");
            }
            String[] keys = partitions.keyNames();
            String[] values = partitions.values(row);
            CreatePartitionRequest.Builder req = CreatePartitionRequest.newBuilder().setTablePath(path.toPb())
                    .setIgnoreIfExists(true);
            for (int i = 0; i < keys.length; i++) {
                req.putPartitionSpec(keys[i], values[i]);
            }
            var r = client.adminCall(a -> a.createPartition(req.build()), "CreatePartition");
            FlussRpcException.check(r.getError(), "Create partition '" + name + "' of " + path);
            refreshPartitions();
            id = partitionIds.get(name);
            if (id == null) {
                throw new IOException("Partition '" + name + "' of table " + path + " not found after creating it");
            }
        }
        return id;
    }

    private void refreshPartitions() {
        ListPartitionInfosResponse r = client.adminCall(a -> a.listPartitionInfos(
                ListPartitionInfosRequest.newBuilder().setTablePath(path.toPb()).build()), "ListPartitionInfos");
        FlussRpcException.check(r.getError(), "Partitions of " + path);
        for (PartitionInfoPb p : r.getPartitionsList()) {
            partitionIds.put(p.getPartitionName(), p.getPartitionId());
            partitionBuckets.put(p.getPartitionId(), FlussClient.bucketCount(p, numBuckets));
        }
    }

    private void seal(TableBucket tb, ArrowBatchWriter buf) {
        int seq = LogBatch.NO_BATCH_SEQUENCE;
        if (writerId != LogBatch.NO_WRITER_ID) {
            seq = nextSequence.getOrDefault(tb, 0);
            nextSequence.put(tb, seq + 1);
        }
        byte[] batch = buf.finish(schemaId, writerId, seq);
        ready.computeIfAbsent(tb, k -> new ArrayDeque<>()).add(batch);
        pendingBytes += batch.length;
    }

    @Override
    public void flush(boolean endOfInput) throws IOException {
        for (Map.Entry<TableBucket, ArrowBatchWriter> e : buffers.entrySet()) {
            if (e.getValue().rowCount() > 0) {
                seal(e.getKey(), e.getValue());
            }
        }
        while (true) {
            reapDone();
            dispatch();
            if (inFlight.isEmpty()) {
                if (ready.isEmpty()) {
                    return;
                }
                failed("no leader"); // nothing could be sent: the buckets left have no leader right now
            } else {
                reap(inFlight.peekFirst());
            }
        }
    }

    /**
     * Sends what is ready without waiting for the answers (the task goes on converting rows meanwhile), and
     * waits for the oldest requests only while more than {@code requestMaxBytes} are buffered or in flight.
     */
    private void pump() throws IOException {
        reapDone();
        dispatch();
        while (pendingBytes >= settings.requestMaxBytes && !inFlight.isEmpty()) {
            reap(inFlight.peekFirst());
            dispatch();
        }
    }

    /**
     * One request per leader with the ready batches of its buckets that have no request in flight (at most
     * {@link #MAX_BATCHES_PER_REQUEST} of a bucket, sent in order; a bucket has one request in flight at a time,
     * so its batches are appended in sequence order and a resent request is deduplicated by the server).
     */
    private void dispatch() throws IOException {
        if (ready.isEmpty()) {
            return;
        }
        Map<Integer, List<TableBucket>> byLeader = new HashMap<>();
        for (TableBucket tb : ready.keySet()) {
            if (busy.contains(tb)) {
                continue;
            }
            int leader;
            try {
                leader = client.leader(path, tb);
            } catch (FlussRpcException e) {
                if (!e.isRetriable()) {
                    throw new IOException(e);
                }
                leader = -1;
            }
            if (leader >= 0) {
                byLeader.computeIfAbsent(leader, k -> new ArrayList<>()).add(tb);
            }
        }
        int perBucket = kv ? 1 : MAX_BATCHES_PER_REQUEST;
        for (Map.Entry<Integer, List<TableBucket>> e : byLeader.entrySet()) {
            Map<TableBucket, List<byte[]>> batches = new LinkedHashMap<>();
            for (TableBucket tb : e.getValue()) {
                ArrayDeque<byte[]> q = ready.get(tb);
                List<byte[]> taken = new ArrayList<>();
                while (!q.isEmpty() && taken.size() < perBucket) {
                    taken.add(q.pollFirst());
                }
                if (q.isEmpty()) {
                    ready.remove(tb);
                }
                batches.put(tb, taken);
                busy.add(tb);
            }
            ListenableFuture<List<ProduceBucketResultPb>> future;
            try {
                future = kv ? putKv(e.getKey(), batches) : produceLog(e.getKey(), batches);
            } catch (RuntimeException ex) { // the call could not even start: treated like a failed answer
                future = Futures.immediateFailedFuture(ex);
            }
            inFlight.addLast(new Call(future, batches));
        }
    }

    /** Handles the answers of the requests that are done, without waiting. */
    private void reapDone() throws IOException {
        for (Call c : new ArrayList<>(inFlight)) {
            if (c.future.isDone()) {
                reap(c);
            }
        }
    }

    /**
     * Waits for one request's answer: acknowledged batches are dropped, batches of buckets with a retriable
     * error go back to the front of their queue (in order) to be resent after a back-off.
     */
    private void reap(Call call) throws IOException {
        inFlight.remove(call);
        Map<String, ProduceBucketResultPb> results = new HashMap<>();
        String lastError = "no answer";
        try {
            for (ProduceBucketResultPb r : call.future.get()) {
                results.put(r.getPartitionId() + "/" + r.getBucketId(), r);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("Interrupted while writing to " + path, e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof FlussRpcException && !((FlussRpcException) e.getCause()).isRetriable()) {
                throw new IOException(e.getCause()); // a request-level error the server will not change
            }
            lastError = e.getCause().toString();
        }
        boolean retry = false;
        for (Map.Entry<TableBucket, List<byte[]>> e : call.batches.entrySet()) {
            TableBucket tb = e.getKey();
            busy.remove(tb);
            ProduceBucketResultPb r = results.get(tb.partitionId + "/" + tb.bucket);
            int code = r == null ? FlussRpcException.NETWORK_EXCEPTION : r.getError().getCode();
            if (code == 0) {
                for (byte[] b : e.getValue()) {
                    pendingBytes -= b.length;
                }
            } else if (code == FlussRpcException.UNKNOWN_WRITER_ID && writerId != LogBatch.NO_WRITER_ID) {
                ArrayDeque<byte[]> q = ready.computeIfAbsent(tb, k -> new ArrayDeque<>());
                List<byte[]> back = e.getValue();
                for (int i = back.size() - 1; i >= 0; i--) {
                    q.addFirst(back.get(i));
                }
                restartSequences(tb); // every earlier batch of the bucket was acknowledged
                retry = true;
                lastError = r.getError().getMessage();
            } else if (FlussRpcException.isRetriable(code)) {
                client.invalidate(tb);
                ArrayDeque<byte[]> q = ready.computeIfAbsent(tb, k -> new ArrayDeque<>());
                List<byte[]> back = e.getValue();
                for (int i = back.size() - 1; i >= 0; i--) {
                    q.addFirst(back.get(i));
                }
                retry = true;
                if (r != null) {
                    lastError = r.getError().getMessage();
                }
            } else {
                throw new IOException(new FlussRpcException(code, "Writing to " + path + " " + tb + ": "
                        + r.getError().getMessage()));
            }
        }
        if (retry) {
            failed(lastError);
        } else {
            failures = 0;
        }
    }

    /** Counts a failed attempt (too many in a row fail the write) and backs off before the next one. */
    private void failed(String lastError) throws IOException {
        if (++failures > settings.retries || failures > 600) {
            throw new IOException("Writing to " + path + " failed after " + failures + " attempts: " + lastError);
        }
        FlussClient.sleep(Math.min(1000, 50L * failures));
    }

    /**
     * The leader has no batch of this writer in the bucket and the request's first batch was not sequence 0: the
     * bucket forgot the writer (its batches expired from the log, or the log restarted without writer state). A
     * bucket has one request in flight and every earlier one was acknowledged, so no earlier batch can still
     * arrive: the bucket's queued batches (the failed request's first) are re-stamped from sequence 0 and resent.
     */
    private void restartSequences(TableBucket tb) {
        int seq = 0;
        for (byte[] batch : ready.get(tb)) {
            LogBatch.restampSequence(batch, seq++);
        }
        nextSequence.put(tb, seq);
    }

    /** A request in flight and the batches it carries, per bucket in order. */
    private static final class Call {
        final ListenableFuture<List<ProduceBucketResultPb>> future;
        final Map<TableBucket, List<byte[]>> batches;

        Call(ListenableFuture<List<ProduceBucketResultPb>> future, Map<TableBucket, List<byte[]>> batches) {
            this.future = future;
            this.batches = batches;
        }
    }

    private static ByteString records(List<byte[]> batches) {
        ByteString out = ByteString.EMPTY;
        for (byte[] b : batches) {
            out = out.concat(UnsafeByteOperations.unsafeWrap(b)); // sealed batches are never modified
        }
        return out;
    }

    private ListenableFuture<List<ProduceBucketResultPb>> produceLog(int leader,
                                                                     Map<TableBucket, List<byte[]>> batches) {
        ProduceLogRequest.Builder req = ProduceLogRequest.newBuilder().setAcks(settings.acks).setTableId(tableId)
                .setTimeoutMs(30_000);
        for (Map.Entry<TableBucket, List<byte[]>> e : batches.entrySet()) {
            TableBucket tb = e.getKey();
            req.addBuckets(ProduceBucketPb.newBuilder().setPartitionId(tb.partitionId).setBucketId(tb.bucket)
                    .setRecords(records(e.getValue())));
        }
        return Futures.transform(client.tabletAsync(leader).produceLog(req.build()),
                r -> FlussClient.checkResponse(r, "ProduceLog to " + path).getBucketsList(),
                MoreExecutors.directExecutor());
    }

    private ListenableFuture<List<ProduceBucketResultPb>> putKv(int leader, Map<TableBucket, List<byte[]>> batches) {
        PutKvRequest.Builder req = PutKvRequest.newBuilder().setAcks(settings.acks).setTableId(tableId)
                .setTimeoutMs(30_000);
        if (targetColumns != null) {
            for (int c : targetColumns) {
                req.addTargetColumns(c);
            }
        }
        for (Map.Entry<TableBucket, List<byte[]>> e : batches.entrySet()) {
            TableBucket tb = e.getKey();
            req.addBuckets(PutKvBucketPb.newBuilder().setPartitionId(tb.partitionId).setBucketId(tb.bucket)
                    .setRecords(records(e.getValue())));
        }
        return Futures.transform(client.tabletAsync(leader).putKv(req.build()),
                r -> FlussClient.checkResponse(r, "PutKv to " + path).getBucketsList(),
                MoreExecutors.directExecutor());
    }

    @Override
    public void close() throws Exception {
        lease.close(); // first: the last user of a client closes it (its threads must not outlive the job's classes)
        for (ArrowBatchWriter w : buffers.values()) {
            w.close();
        }
        buffers.clear();
        allocator.close();
    }
}
