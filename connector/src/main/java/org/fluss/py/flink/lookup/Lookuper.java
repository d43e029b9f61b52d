package org.fluss.py.flink.lookup;

import org.fluss.py.flink.client.ConnectionConfig;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import com.google.protobuf.ByteString;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.FlussRpcException;
import org.fluss.py.flink.client.TableBucket;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.key.BucketingFunction;
import org.fluss.py.flink.key.KeyEncoder;
import org.fluss.py.flink.key.PartitionNames;
import org.fluss.py.flink.record.EvolvingBatchReader;
import org.fluss.py.flink.record.LogBatch;
import org.fluss.py.rpc.ErrorInfo;
import org.fluss.py.rpc.ListPartitionInfosRequest;
import org.fluss.py.rpc.ListPartitionInfosResponse;
import org.fluss.py.rpc.LookupBucketPb;
import org.fluss.py.rpc.LookupBucketResultPb;
import org.fluss.py.rpc.LookupRequest;
import org.fluss.py.rpc.PartitionInfoPb;
import org.fluss.py.rpc.PrefixLookupBucketPb;
import org.fluss.py.rpc.PrefixLookupBucketResultPb;
import org.fluss.py.rpc.PrefixLookupRequest;
import org.fluss.py.rpc.TableDescriptorPb;
import org.fluss.py.rpc.TableInfoPb;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Looks up the rows of a primary-key table by the key columns of a lookup join: the full primary key (a Lookup
 * RPC) or the bucket key plus the partition keys (a PrefixLookup RPC: every row whose primary key starts with
 * the encoded bucket-key prefix). The key row of Flink is spread into a row of the table's width so the shared
 * key encoder, bucket function and partition names apply unchanged (the same bytes as the Python client).
 * Retriable errors (leader moved, server unreachable) refresh the leaders and retry up to {@code maxRetries}
 * times. Thread-safe: the async lookup function calls it from a small thread pool.
 */
public final class Lookuper implements Serializable, AutoCloseable {
    private static final long serialVersionUID = 1L;

    private final ConnectionConfig connection;
    private final TablePath path;
    private final RowType tableType;
    private final int[] keyPositions; // positions in the table of the fields of Flink's key row
    private final int[] projection; // output columns (null = all)
    private final int maxRetries;

    private transient FlussClient client;
    private transient BufferAllocator allocator;
    private transient EvolvingBatchReader reader; // rows of any schema id (ALTER TABLE ADD)
    private transient RowData.FieldGetter[] keyGetters;
    private transient KeyEncoder keyEncoder; // the primary key, or the encoded prefix columns
    private transient BucketingFunction bucketing; // the table's bucket function over its bucket key
    private transient PartitionNames partitions;
    private transient boolean prefix;
    private transient long tableId;
    private transient int numBuckets;
    private transient Map<String, Long> partitionIds;
    // each partition's own bucket count (ALTER TABLE SET bucket.num changes the count of later partitions only)
    private transient Map<Long, Integer> partitionBuckets;

    public Lookuper(ConnectionConfig connection, TablePath path, RowType tableType, int[] keyPositions, int[] projection,
                    int maxRetries) {
        this.connection = connection;
        this.path = path;
        this.tableType = tableType;
        this.keyPositions = keyPositions;
        this.projection = projection;
        this.maxRetries = maxRetries;
    }

    public void open() {
        client = new FlussClient(connection);
        allocator = new RootAllocator();
        reader = new EvolvingBatchReader(tableType, null, () -> client.tableInfo(path), allocator);
        partitionIds = new ConcurrentHashMap<>();
        partitionBuckets = new ConcurrentHashMap<>();
        TableInfoPb info = client.tableInfo(path);
        TableDescriptorPb d = info.getDescriptorPb();
        tableId = info.getTableId();
        numBuckets = d.getBucketCount();
        List<String> names = tableType.getFieldNames();
        List<LogicalType> types = tableType.getChildren();
        keyGetters = new RowData.FieldGetter[keyPositions.length];
        Set<String> keyNames = new HashSet<>();
        for (int i = 0; i < keyPositions.length; i++) {
            keyGetters[i] = RowData.createFieldGetter(types.get(keyPositions[i]), i);
            keyNames.add(names.get(keyPositions[i]));
        }
        List<String> pk = d.getSchema().getPrimaryKeysList();
        List<String> partitionKeys = d.getPartitionKeysList();
        List<String> bucketKeys = new ArrayList<>(d.getBucketKeysList());
        if (bucketKeys.isEmpty()) {
            bucketKeys.addAll(pk);
            bucketKeys.removeAll(partitionKeys);
        }
        if (pk.isEmpty()) {
            throw new IllegalStateException("Lookup join on Fluss table " + path + ": it has no primary key");
        }
        if (keyNames.equals(new HashSet<>(pk))) {
            keyEncoder = new KeyEncoder(types, positions(names, pk));
        } else {
            Set<String> expected = new HashSet<>(bucketKeys);
            expected.addAll(partitionKeys);
            List<String> physical = new ArrayList<>(pk);
            physical.removeAll(partitionKeys);
            if (!keyNames.equals(expected) || !physical.subList(0, Math.min(bucketKeys.size(), physical.size()))
                    .equals(bucketKeys)) {
                throw new IllegalStateException("Lookup join on Fluss table " + path + " by " + keyNames + ": the join "
                        + "keys must be the primary key " + pk + " or, for a prefix lookup, the bucket key "
                        + bucketKeys + (partitionKeys.isEmpty() ? "" : " plus the partition keys " + partitionKeys)
                        + " (the bucket key being a leading part of the primary key without partition keys)");
            }
            prefix = true;
            int last = 0;
            for (String b : bucketKeys) {
                last = Math.max(last, pk.indexOf(b));
            }
            keyEncoder = new KeyEncoder(types, positions(names, pk.subList(0, last + 1)));
        }
        bucketing = BucketingFunction.of(d.getPropertiesMap(), types, positions(names, bucketKeys));
        if (!partitionKeys.isEmpty()) {
            partitions = new PartitionNames(names, types, positions(names, partitionKeys));
        }
        client.updateMetadata(path, null);
    }

    private int[] positions(List<String> names, List<String> keys) {
        int[] out = new int[keys.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = names.indexOf(keys.get(i));
        }
        return out;
    }

    /** The rows matching a Flink key row (in the order of the join keys). */
    public List<RowData> lookup(RowData keyRow) {
        return lookupKey(toTableRow(keyRow));
    }

    /** The key values spread into a row of the table's width; null when a key value is null. */
    public GenericRowData toTableRow(RowData keyRow) {
        GenericRowData full = new GenericRowData(tableType.getFieldCount());
        for (int i = 0; i < keyPositions.length; i++) {
            Object v = keyGetters[i].getFieldOrNull(keyRow);
            if (v == null) {
                return null; // a null key matches nothing (key columns are NOT NULL)
            }
            full.setField(keyPositions[i], v);
        }
        return full;
    }

    /** The rows matching key values already spread by {@link #toTableRow}. */
    public List<RowData> lookupKey(GenericRowData full) {
        if (full == null) {
            return Collections.emptyList();
        }
        long partitionId = TableBucket.NO_PARTITION;
        if (partitions != null) {
            Long id = partitionId(partitions.name(full));
            if (id == null) {
                return Collections.emptyList();
            }
            partitionId = id;
        }
        int n = partitionId == TableBucket.NO_PARTITION ? numBuckets
                : partitionBuckets.getOrDefault(partitionId, numBuckets);
        TableBucket tb = new TableBucket(tableId, partitionId, bucketing.bucket(full, n));
        ByteString key = ByteString.copyFrom(keyEncoder.encode(full));
        for (int attempt = 0; ; attempt++) {
            try {
                return prefix ? prefixLookup(tb, key) : pointLookup(tb, key);
            } catch (FlussRpcException e) {
                if (!e.isRetriable() || attempt >= maxRetries) {
                    throw new RuntimeException("Lookup in Fluss table " + path + " failed after " + (attempt + 1)
                            + " attempt(s): " + e.getMessage(), e);
                }
                client.invalidate(tb);
                FlussClient.sleep(Math.min(1000, 100L * (attempt + 1)));
            }
        }
    }

    private int leaderOrThrow(TableBucket tb) {
        int leader = client.leader(path, tb);
        if (leader < 0) {
            throw new FlussRpcException(FlussRpcException.NETWORK_EXCEPTION, "No leader for " + tb + " of " + path);
        }
        return leader;
    }

    private List<RowData> pointLookup(TableBucket tb, ByteString key) {
        int leader = leaderOrThrow(tb);
        LookupRequest req = LookupRequest.newBuilder().setTableId(tableId).addBuckets(LookupBucketPb.newBuilder()
                .setPartitionId(tb.partitionId).setBucketId(tb.bucket).addKeys(key)).build();
        LookupBucketResultPb r = FlussClient.call(() -> client.tablet(leader).lookup(req), "Lookup")
                .getBuckets(0);
        check(r.getError(), tb);
        return decode(r.getRows());
    }

    private List<RowData> prefixLookup(TableBucket tb, ByteString key) {
        int leader = leaderOrThrow(tb);
        PrefixLookupRequest req = PrefixLookupRequest.newBuilder().setTableId(tableId).addBuckets(
                PrefixLookupBucketPb.newBuilder().setPartitionId(tb.partitionId).setBucketId(tb.bucket)
                        .addPrefixes(key)).build();
        PrefixLookupBucketResultPb r = FlussClient.call(() -> client.tablet(leader).prefixLookup(req),
                "PrefixLookup").getBuckets(0);
        check(r.getError(), tb);
        return decode(r.getRows());
    }

    private void check(ErrorInfo error, TableBucket tb) {
        if (error.getCode() != 0) {
            throw new FlussRpcException(error.getCode(), "Lookup in " + path + " " + tb + ": " + error.getMessage());
        }
    }

    private synchronized List<RowData> decode(ByteString rows) {
        if (rows.isEmpty()) {
            return Collections.emptyList();
        }
        List<RowData> out = new ArrayList<>();
        for (LogBatch.View batch : LogBatch.parse(rows.toByteArray())) {
            for (RowData row : reader.read(batch, 0)) {
                out.add(project(row));
            }
        }
        return out;
    }

    private RowData project(RowData row) {
        if (projection == null) {
            return row;
        }
        GenericRowData full = (GenericRowData) row;
        GenericRowData out = new GenericRowData(projection.length);
        for (int i = 0; i < projection.length; i++) {
            out.setField(i, full.getField(projection[i]));
        }
        return out;
    }

    private Long partitionId(String name) {
        Long id = partitionIds.get(name);
        if (id == null) {
            ListPartitionInfosResponse r = client.adminCall(a -> a.listPartitionInfos(
                    ListPartitionInfosRequest.newBuilder().setTablePath(path.toPb()).build()), "ListPartitionInfos");
            FlussRpcException.check(r.getError(), "Partitions of " + path);
            List<Long> ids = new ArrayList<>();
            for (PartitionInfoPb p : r.getPartitionsList()) {
                partitionBuckets.put(p.getPartitionId(), FlussClient.bucketCount(p, numBuckets));
                partitionIds.put(p.getPartitionName(), p.getPartitionId()); // after its count: read without a lock
                ids.add(p.getPartitionId());
            }
            client.updateMetadata(null, ids);
            id = partitionIds.get(name);
        }
        return id;
    }

    @Override
    public synchronized void close() {
        if (client != null) { // first: its threads must not outlive the job, whatever fails below
            client.close();
            client = null;
        }
        if (reader != null) {
            reader.close();
            reader = null;
        }
        if (allocator != null) {
            allocator.close();
            allocator = null;
        }
    }
}
