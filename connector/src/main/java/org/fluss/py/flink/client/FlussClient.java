package org.fluss.py.flink.client;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.fluss.py.rpc.AdminServiceGrpc;
import org.fluss.py.rpc.BucketMetadataPb;
import org.fluss.py.rpc.ErrorInfo;
import org.fluss.py.rpc.GetFileSystemSecurityTokenRequest;
import org.fluss.py.rpc.GetFileSystemSecurityTokenResponse;
import org.fluss.py.rpc.GetMetadataRequest;
import org.fluss.py.rpc.GetMetadataResponse;
import org.fluss.py.rpc.GetTableInfoRequest;
import org.fluss.py.rpc.GetTableInfoResponse;
import org.fluss.py.rpc.GetTableStatsRequest;
import org.fluss.py.rpc.GetTableStatsResponse;
import org.fluss.py.rpc.ListOffsetsRequest;
import org.fluss.py.rpc.ListOffsetsResponse;
import org.fluss.py.rpc.ListOffsetsBucketResultPb;
import org.fluss.py.rpc.KeyValuePb;
import org.fluss.py.rpc.PartitionInfoPb;
import org.fluss.py.rpc.PartitionMetadataPb;
import org.fluss.py.rpc.ServerNodePb;
import org.fluss.py.rpc.TableInfoPb;
import org.fluss.py.rpc.TableMetadataPb;
import org.fluss.py.rpc.TableStatsBucketPb;
import org.fluss.py.rpc.TableStatsBucketResultPb;
import org.fluss.py.rpc.TabletServiceGrpc;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * The connector's RPC client: gRPC channels to the coordinators (the {@code bootstrap.servers}; calls fail over
 * to the next one, see {@link #adminCall}) and one
 * per tablet server, plus a cache of bucket leaders from {@code GetMetadata}. Reads and writes go to the
 * bucket leader; a caller that sees a retriable error calls {@link #invalidate} and asks again.
 *
 * Channels come from this client's {@link ChannelFactory} (options, interceptors, its own event loop and executor):
 * {@link #close()} shuts the channels and the factory down and waits for them, so no gRPC thread outlives a job's
 * class loader. A data response may carry a request-level error (its {@code error} field, set by the server's
 * error door): {@link #call} and {@link #checkResponse} turn it into a {@link FlussRpcException}.
 */
public final class FlussClient implements AutoCloseable {
    public static final int OFFSET_EARLIEST = 0;
    public static final int OFFSET_LATEST = 1;
    public static final int OFFSET_TIMESTAMP = 2;
    /** Per-attempt deadline of a coordinator call, so a dead address gives way to the next one. */
    static final long ADMIN_ATTEMPT_MS = 10_000L;
    /**
     * How long calls keep trying while no bootstrap server has ever answered and every address refuses the
     * connection or does not resolve (client.connect-timeout): a wrong address fails in seconds, naming itself and
     * the cause, instead of after the whole request timeout. An address that accepts but does not answer in time
     * (a server still starting, a first call loading gRPC) gets the request timeout.
     */
    public static final long DEFAULT_CONNECT_TIMEOUT_MS = 5_000L;
    private static final Set<Status.Code> FAILOVER_CODES = EnumSet.of(Status.Code.UNAVAILABLE,
            Status.Code.DEADLINE_EXCEEDED, Status.Code.CANCELLED);

    private final List<InetSocketAddress> bootstrap = new ArrayList<>();
    private final long timeoutMs;
    private final long connectTimeoutMs;
    private volatile boolean reached; // some bootstrap server has answered once: there is a cluster
    private final ManagedChannel[] coordinators; // one per bootstrap address, opened on first use
    private int activeCoordinator; // index into bootstrap of the coordinator that last answered
    private final Map<Integer, ManagedChannel> tablets = new ConcurrentHashMap<>();
    private final Map<Integer, ServerNodePb> nodes = new ConcurrentHashMap<>();
    /** (tableId, partitionId) -> bucket -> leader server id */
    private final Map<String, Map<Integer, Integer>> leaders = new ConcurrentHashMap<>();
    private final ChannelFactory channels;
    private final boolean tls;

    public FlussClient(String bootstrapServers) {
        this(ConnectionConfig.plaintext(bootstrapServers));
    }

    public FlussClient(ConnectionConfig connection) {
        this(connection, 30_000L);
    }

    public FlussClient(String bootstrapServers, long timeoutMs) {
        this(ConnectionConfig.plaintext(bootstrapServers), timeoutMs);
    }

    public FlussClient(ConnectionConfig connection, long timeoutMs) {
        this(connection, timeoutMs, DEFAULT_CONNECT_TIMEOUT_MS);
    }

    public FlussClient(String bootstrapServers, long timeoutMs, long connectTimeoutMs) {
        this(ConnectionConfig.plaintext(bootstrapServers), timeoutMs, connectTimeoutMs);
    }

    public FlussClient(ConnectionConfig connection, long timeoutMs, long connectTimeoutMs) {
        String bootstrapServers = connection.bootstrapServers();
        if (bootstrapServers == null || bootstrapServers.isBlank()) {
            throw new IllegalArgumentException("Option 'bootstrap.servers' is required (host:port[,host:port])");
        }
        for (String s : bootstrapServers.split(",")) {
            String hp = s.trim();
            if (hp.isEmpty()) {
                continue;
            }
            int colon = hp.lastIndexOf(':');
            String host = colon > 0 ? hp.substring(0, colon).replace("[", "").replace("]", "") : "";
            int port = -1;
            try {
                port = colon > 0 ? Integer.parseInt(hp.substring(colon + 1)) : -1;
            } catch (NumberFormatException e) {
                // reported below
            }
            if (host.isEmpty() || port < 1 || port > 65535) {
                throw new IllegalArgumentException("Invalid 'bootstrap.servers' entry '" + hp
                        + "': use host:port (port 1-65535)");
            }
            bootstrap.add(InetSocketAddress.createUnresolved(host, port));
        }
        if (bootstrap.isEmpty()) {
            throw new IllegalArgumentException("Option 'bootstrap.servers' is empty: give host:port[,host:port]");
        }
        this.timeoutMs = timeoutMs;
        this.connectTimeoutMs = connectTimeoutMs;
        this.coordinators = new ManagedChannel[bootstrap.size()];
        this.tls = connection.isTls();
        this.channels = new ChannelFactory(connection.interceptors(), connection.channelCredentials(), timeoutMs);
    }

    private ManagedChannel channel(String host, int port) {
        return channels.channel(host, port);
    }

    private synchronized ManagedChannel coordinatorChannel(int index) {
        if (coordinators[index] == null) {
            InetSocketAddress a = bootstrap.get(index);
            coordinators[index] = channel(a.getHostString(), a.getPort());
        }
        return coordinators[index];
    }

    /**
     * Calls the active coordinator. The bootstrap addresses are tried in turn, starting with the one that
     * answered last: an unreachable address, or a standby that answers INVALID_COORDINATOR, sends the call to the
     * next, until one answers or {@code timeoutMs} has passed (a coordinator failover takes a ZooKeeper session
     * timeout). Each attempt has its own deadline of at most {@link #ADMIN_ATTEMPT_MS}.
     */
    public <R extends Message> R adminCall(Function<AdminServiceGrpc.AdminServiceBlockingStub, R> rpc, String what) {
        long start = System.currentTimeMillis();
        long deadline = start + timeoutMs;
        // until a server has answered once, addresses that refuse connections or do not resolve fail fast
        long fastDeadline = start + Math.min(timeoutMs, connectTimeoutMs);
        FlussRpcException last = null;
        Map<Integer, String> unreachable = new java.util.TreeMap<>();
        Map<Integer, String> tlsRefused = new java.util.TreeMap<>(); // addresses whose TLS handshake failed
        while (true) {
            int first;
            synchronized (this) {
                first = activeCoordinator;
            }
            for (int i = 0; i < bootstrap.size(); i++) {
                int index = (first + i) % bootstrap.size();
                long attemptMs = Math.max(500L, Math.min(ADMIN_ATTEMPT_MS, deadline - System.currentTimeMillis()));
                R r;
                try {
                    r = rpc.apply(AdminServiceGrpc.newBlockingStub(coordinatorChannel(index))
                            .withDeadlineAfter(attemptMs, TimeUnit.MILLISECONDS));
                } catch (StatusRuntimeException e) {
                    if (!FAILOVER_CODES.contains(e.getStatus().getCode())) {
                        throw new FlussRpcException(FlussRpcException.NETWORK_EXCEPTION,
                                what + " to " + address(index) + " failed: " + e.getStatus());
                    }
                    String tlsWhy = tlsFailure(e.getStatus());
                    if (tlsWhy != null) {
                        tlsRefused.put(index, tlsWhy);
                    }
                    unreachable.put(index, tlsWhy != null ? tlsWhy : unreachableReason(index, e.getStatus(), attemptMs));
                    if (last == null || last.code() == FlussRpcException.NETWORK_EXCEPTION) {
                        // a standby's answer says more than a timeout: keep it
                        last = new FlussRpcException(FlussRpcException.NETWORK_EXCEPTION,
                                what + " to " + address(index) + " failed: " + unreachable.get(index));
                    }
                    continue;
                }
                reached = true;
                unreachable.remove(index);
                ErrorInfo error = errorOf(r);
                if (error != null && error.getCode() == FlussRpcException.INVALID_COORDINATOR) {
                    last = new FlussRpcException(error.getCode(), what + " to " + address(index) + ": "
                            + error.getMessage());
                    continue;
                }
                synchronized (this) {
                    activeCoordinator = index;
                }
                return r;
            }
            if (!reached && tlsRefused.size() == bootstrap.size()) {
                // no retry mends a TLS mismatch or an untrusted certificate: say so at once
                StringBuilder causes = new StringBuilder();
                for (Map.Entry<Integer, String> e : tlsRefused.entrySet()) {
                    causes.append(causes.length() == 0 ? "" : "; ").append(address(e.getKey())).append(": ")
                            .append(e.getValue());
                }
                throw new FlussRpcException(FlussRpcException.AUTHENTICATE_EXCEPTION,
                        "Cannot connect to the Fluss cluster (bootstrap.servers=" + bootstrapText() + "): " + causes);
            }
            long now = System.currentTimeMillis();
            boolean definite = !reached && unreachable.size() == bootstrap.size()
                    && unreachable.values().stream().noneMatch(r -> r.startsWith("no answer"));
            if (now >= deadline || (definite && now >= fastDeadline)) {
                if (unreachable.size() == bootstrap.size()) {
                    StringBuilder causes = new StringBuilder();
                    for (Map.Entry<Integer, String> e : unreachable.entrySet()) {
                        causes.append(causes.length() == 0 ? "" : "; ").append(address(e.getKey())).append(": ")
                                .append(e.getValue());
                    }
                    throw new FlussRpcException(FlussRpcException.NETWORK_EXCEPTION,
                            (reached ? "No coordinator reachable" : "Cannot connect to the Fluss cluster")
                                    + " (bootstrap.servers=" + bootstrapText() + ") after "
                                    + String.format(java.util.Locale.ROOT, "%.1f",
                                            (System.currentTimeMillis() - start) / 1000.0)
                                    + "s: " + causes);
                }
                throw last;
            }
            sleep(200);
        }
    }

    private String address(int index) {
        InetSocketAddress a = bootstrap.get(index);
        return a.getHostString() + ":" + a.getPort();
    }

    private String bootstrapText() {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < bootstrap.size(); i++) {
            b.append(i == 0 ? "" : ",").append(address(i));
        }
        return b.toString();
    }

    /**
     * Why a connection failed when TLS is the reason (null otherwise), as the Python client says it
     * ({@code fluss/rpc/tls.py}): a TLS client at a plaintext listener, an untrusted or refused certificate, or a
     * plaintext client at a TLS listener (the server closes the connection at once).
     */
    private String tlsFailure(Status status) {
        StringBuilder text = new StringBuilder(String.valueOf(status.getDescription()));
        boolean handshake = false;
        for (Throwable t = status.getCause(); t != null; t = t.getCause()) {
            handshake |= t instanceof javax.net.ssl.SSLException;
            text.append(' ').append(t.getClass().getSimpleName()).append(": ").append(t.getMessage());
        }
        String all = text.toString();
        String lower = all.toLowerCase(Locale.ROOT);
        if (tls && (handshake || lower.contains("ssl") || lower.contains("handshake"))) {
            if (lower.contains("not an ssl/tls record") || lower.contains("wrong_version_number")
                    || lower.contains("unrecognized_name") || lower.contains("plaintext connection")) {
                return "TLS handshake failed: the listener does not speak TLS (a plaintext listener? unset "
                        + "client.security.ssl.enabled, or use the TLS listener's port)";
            }
            return "TLS handshake failed (" + firstLine(all) + "): the server's certificate is not signed by a CA in "
                    + "client.security.ssl.truststore.path, does not name this host, or the server refused this "
                    + "client's certificate";
        }
        if (!tls && status.getCode() == Status.Code.UNAVAILABLE && (lower.contains("closed")
                || lower.contains("connection reset") || lower.contains("http/2 client preface"))) {
            return "the server closed the connection at once: a TLS listener? (set client.security.ssl.enabled "
                    + "and client.security.ssl.truststore.path)";
        }
        return null;
    }

    private static String firstLine(String text) {
        String line = text.lines().findFirst().orElse(text);
        return line.length() <= 160 ? line : line.substring(0, 157) + "...";
    }

    /** A few words on why a bootstrap address could not be reached (no gRPC debug text). */
    private String unreachableReason(int index, Status status, long attemptMs) {
        if (status.getCode() == Status.Code.DEADLINE_EXCEEDED) {
            return "no answer within " + attemptMs / 1000.0 + "s";
        }
        for (Throwable t = status.getCause(); t != null; t = t.getCause()) {
            if (t instanceof java.net.UnknownHostException) {
                return "unknown host '" + bootstrap.get(index).getHostString() + "'";
            }
            if (t instanceof java.net.ConnectException) {
                return "connection refused (nothing is listening there)";
            }
        }
        String d = status.getDescription() == null ? status.getCode().name() : status.getDescription();
        if (d.contains("Connection refused")) {
            return "connection refused (nothing is listening there)";
        }
        if (d.contains("UnknownHost") || d.contains("Unable to resolve") || d.contains("unresolved address")) {
            return "unknown host '" + bootstrap.get(index).getHostString() + "'";
        }
        return d.lines().findFirst().orElse(d);
    }

    /** Checks that the cluster answers (one GetServerNodes call): fails fast, see {@link #adminCall}. */
    public void checkReachable() {
        checkResponse(adminCall(a -> a.getServerNodes(org.fluss.py.rpc.GetServerNodesRequest.getDefaultInstance()),
                "GetServerNodes"), "Connecting to " + bootstrapText()); // e.g. refused credentials
    }

    private static ErrorInfo errorOf(Message response) {
        Descriptors.FieldDescriptor field = response.getDescriptorForType().findFieldByName("error");
        return field == null || !response.hasField(field) ? null : (ErrorInfo) response.getField(field);
    }

    private ManagedChannel tabletChannel(int serverId) {
        return tablets.computeIfAbsent(serverId, id -> {
            ServerNodePb node = nodes.get(id);
            if (node == null) {
                throw new FlussRpcException(FlussRpcException.NETWORK_EXCEPTION, "Unknown tablet server " + id);
            }
            return channel(node.getHost(), node.getPort());
        });
    }

    public TabletServiceGrpc.TabletServiceBlockingStub tablet(int serverId) {
        return TabletServiceGrpc.newBlockingStub(tabletChannel(serverId)).withDeadlineAfter(timeoutMs,
                TimeUnit.MILLISECONDS);
    }

    public TabletServiceGrpc.TabletServiceFutureStub tabletAsync(int serverId) {
        return TabletServiceGrpc.newFutureStub(tabletChannel(serverId)).withDeadlineAfter(timeoutMs,
                TimeUnit.MILLISECONDS);
    }

    /**
     * The options to read {@code remote.data.dir} directly (remote log segments): the coordinator's
     * GetFileSystemSecurityToken answer as Fluss's {@code s3.*} keys.
     */
    public Map<String, String> fileSystemOptions() {
        GetFileSystemSecurityTokenResponse r = adminCall(s -> s.getFileSystemSecurityToken(
                GetFileSystemSecurityTokenRequest.getDefaultInstance()), "GetFileSystemSecurityToken");
        if (r.getError().getCode() != 0) {
            throw new FlussRpcException(r.getError().getCode(), "GetFileSystemSecurityToken: "
                    + r.getError().getMessage());
        }
        Map<String, String> out = new HashMap<>();
        for (KeyValuePb kv : r.getAdditionInfoList()) {
            out.put(kv.getKey(), kv.getValue());
        }
        if (!r.getToken().isEmpty()) {
            try {
                com.fasterxml.jackson.databind.JsonNode token = new com.fasterxml.jackson.databind.ObjectMapper()
                        .readTree(r.getToken().toByteArray());
                String[][] keys = {{"access_key", "s3.access-key"}, {"secret_key", "s3.secret-key"},
                                   {"session_token", "s3.session-token"}};
                for (String[] k : keys) {
                    String v = token.path(k[0]).asText("");
                    if (!v.isEmpty()) {
                        out.put(k[1], v);
                    }
                }
            } catch (java.io.IOException e) {
                throw new FlussRpcException(FlussRpcException.NETWORK_EXCEPTION,
                        "Unreadable file system token: " + e.getMessage());
            }
        }
        return out;
    }

    public TableInfoPb tableInfo(TablePath path) {
        GetTableInfoResponse r = adminCall(a -> a.getTableInfo(
                GetTableInfoRequest.newBuilder().setTablePath(path.toPb()).build()), "GetTableInfo " + path);
        FlussRpcException.check(r.getError(), "Table " + path);
        return r.getTableInfo();
    }

    /**
     * The bucket count of a partition: its own (fixed when it was created; {@code ALTER TABLE SET bucket.num}
     * changes the count of later partitions only), or {@code tableCount} when the server did not say.
     */
    public static int bucketCount(PartitionInfoPb partition, int tableCount) {
        return partition.getBucketCount() > 0 ? partition.getBucketCount() : tableCount;
    }

    /** Refreshes leaders of a table (non-partitioned) and of the given partitions. */
    public void updateMetadata(TablePath path, List<Long> partitionIds) {
        GetMetadataRequest.Builder req = GetMetadataRequest.newBuilder();
        if (path != null) {
            req.addTablePaths(path.toPb());
        }
        if (partitionIds != null) {
            req.addAllPartitionIds(partitionIds);
        }
        GetMetadataResponse r = adminCall(a -> a.getMetadata(req.build()), "GetMetadata " + path);
        FlussRpcException.check(r.getError(), "Metadata of " + path);
        for (ServerNodePb n : r.getTabletServersList()) {
            ServerNodePb old = nodes.put(n.getId(), n);
            if (old != null && (!old.getHost().equals(n.getHost()) || old.getPort() != n.getPort())) {
                ManagedChannel c = tablets.remove(n.getId());
                if (c != null) {
                    c.shutdown();
                }
            }
        }
        for (TableMetadataPb t : r.getTablesList()) {
            putLeaders(t.getTableInfo().getTableId(), TableBucket.NO_PARTITION, t.getBucketsList());
        }
        for (PartitionMetadataPb p : r.getPartitionsList()) {
            putLeaders(p.getTableId(), p.getPartitionId(), p.getBucketsList());
        }
    }

    private void putLeaders(long tableId, long partitionId, List<BucketMetadataPb> buckets) {
        Map<Integer, Integer> m = new HashMap<>();
        for (BucketMetadataPb b : buckets) {
            m.put(b.getBucketId(), b.getLeaderId());
        }
        leaders.put(tableId + "/" + partitionId, m);
    }

    /** Leader server id of a bucket, refreshing metadata once if unknown; -1 if there is no leader. */
    public int leader(TablePath path, TableBucket tb) {
        Map<Integer, Integer> m = leaders.get(tb.tableId + "/" + tb.partitionId);
        Integer id = m == null ? null : m.get(tb.bucket);
        if (id == null || id < 0) {
            updateMetadata(tb.partitionId == TableBucket.NO_PARTITION ? path : null,
                    tb.partitionId == TableBucket.NO_PARTITION ? null : List.of(tb.partitionId));
            m = leaders.get(tb.tableId + "/" + tb.partitionId);
            id = m == null ? null : m.get(tb.bucket);
        }
        return id == null ? -1 : id;
    }

    public void invalidate(TableBucket tb) {
        leaders.remove(tb.tableId + "/" + tb.partitionId);
    }

    /**
     * For a new user of a shared client ({@link SharedClients}): every channel reconnects at once instead of after
     * its back-off (a channel that failed to connect while a server was down waits up to two minutes otherwise);
     * after a pause ({@code forgetLeaders}) the cached leaders are dropped too (tables may be gone, the cluster
     * restarted; users refresh the metadata of what they use).
     */
    void prepareForNewUser(boolean forgetLeaders) {
        if (forgetLeaders) {
            leaders.clear();
        }
        for (ManagedChannel c : tablets.values()) {
            c.resetConnectBackoff();
        }
        synchronized (this) {
            for (ManagedChannel c : coordinators) {
                if (c != null) {
                    c.resetConnectBackoff();
                }
            }
        }
    }

    /**
     * Runs a blocking call of this client on its executor (for independent calls a caller wants at the same time);
     * the executor ends with the client.
     */
    public <T> java.util.concurrent.CompletableFuture<T> supplyAsync(java.util.function.Supplier<T> call) {
        return java.util.concurrent.CompletableFuture.supplyAsync(call, channels.executor());
    }

    /**
     * Offsets of buckets: {@link #OFFSET_EARLIEST}, {@link #OFFSET_LATEST} (the high watermark) or
     * {@link #OFFSET_TIMESTAMP} (first offset whose commit timestamp is at or after {@code timestamp}).
     */
    public Map<TableBucket, Long> listOffsets(TablePath path, List<TableBucket> buckets, int type, long timestamp) {
        return fromLeaders(path, buckets, "ListOffsets", (leader, group) -> {
            TableBucket first = group.get(0);
            ListOffsetsRequest.Builder req = ListOffsetsRequest.newBuilder().setFollowerId(-1)
                    .setOffsetType(type).setTimestamp(timestamp).setTableId(first.tableId)
                    .setPartitionId(first.partitionId);
            group.forEach(tb -> req.addBucketIds(tb.bucket));
            ListOffsetsResponse r = call(() -> tablet(leader).listOffsets(req.build()), "ListOffsets");
            List<BucketValue> out = new ArrayList<>();
            for (ListOffsetsBucketResultPb b : r.getBucketsList()) {
                out.add(new BucketValue(new TableBucket(first.tableId, first.partitionId, b.getBucketId()),
                        b.getError(), b.getOffset()));
            }
            return out;
        });
    }

    /**
     * The row count of each bucket, from its leader: a primary-key bucket's committed keys, a log bucket's records
     * between its log start and its high watermark.
     */
    public Map<TableBucket, Long> rowCounts(TablePath path, List<TableBucket> buckets) {
        return fromLeaders(path, buckets, "GetTableStats", (leader, group) -> {
            GetTableStatsRequest.Builder req = GetTableStatsRequest.newBuilder().setTableId(group.get(0).tableId);
            group.forEach(tb -> req.addBuckets(TableStatsBucketPb.newBuilder()
                    .setPartitionId(tb.partitionId).setBucketId(tb.bucket)));
            GetTableStatsResponse r = call(() -> tablet(leader).getTableStats(req.build()), "GetTableStats");
            List<BucketValue> out = new ArrayList<>();
            for (TableStatsBucketResultPb b : r.getBucketsList()) {
                out.add(new BucketValue(new TableBucket(group.get(0).tableId, b.getPartitionId(), b.getBucketId()),
                        b.getError(), b.getRowCount()));
            }
            return out;
        });
    }

    /** One bucket's answer in a per-leader request: a value, or the error its leader reported for it. */
    private static final class BucketValue {
        final TableBucket bucket;
        final ErrorInfo error;
        final long value;

        BucketValue(TableBucket bucket, ErrorInfo error, long value) {
            this.bucket = bucket;
            this.error = error;
            this.value = value;
        }
    }

    /**
     * Asks each bucket's leader for a value, one request per leader and partition; buckets whose leader is unknown,
     * unreachable or answers with a retriable error are retried against fresh metadata (up to 20 rounds).
     */
    private Map<TableBucket, Long> fromLeaders(TablePath path, List<TableBucket> buckets, String what,
                                               BiFunction<Integer, List<TableBucket>, List<BucketValue>> ask) {
        Map<TableBucket, Long> out = new HashMap<>();
        List<TableBucket> todo = new ArrayList<>(buckets);
        for (int attempt = 0; !todo.isEmpty(); attempt++) {
            Map<String, List<TableBucket>> groups = new HashMap<>();
            for (TableBucket tb : todo) {
                int leader = leader(path, tb);
                groups.computeIfAbsent(leader + "/" + tb.partitionId, k -> new ArrayList<>()).add(tb);
            }
            List<TableBucket> retry = new ArrayList<>();
            FlussRpcException last = null;
            for (List<TableBucket> g : groups.values()) {
                TableBucket first = g.get(0);
                int leader = leader(path, first);
                try {
                    if (leader < 0) {
                        throw new FlussRpcException(44, "No leader for " + first + " of " + path);
                    }
                    for (BucketValue b : ask.apply(leader, g)) {
                        if (b.error.getCode() == 0) {
                            out.put(b.bucket, b.value);
                        } else if (FlussRpcException.isRetriable(b.error.getCode())) {
                            invalidate(b.bucket);
                            retry.add(b.bucket);
                            last = new FlussRpcException(b.error.getCode(), b.error.getMessage());
                        } else {
                            FlussRpcException.check(b.error, what + " of " + path + " " + b.bucket);
                        }
                    }
                } catch (FlussRpcException e) {
                    if (!e.isRetriable()) {
                        throw e;
                    }
                    g.forEach(this::invalidate);
                    retry.addAll(g);
                    last = e;
                }
            }
            if (!retry.isEmpty() && attempt >= 20) {
                throw last;
            }
            if (!retry.isEmpty()) {
                sleep(Math.min(1000, 50L * (attempt + 1)));
            }
            todo = retry;
        }
        return out;
    }

    public static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RuntimeException(e);
        }
    }

    /** Runs a blocking call; gRPC transport failures become retriable NETWORK_EXCEPTION errors. */
    public static <T> T call(java.util.function.Supplier<T> rpc, String what) {
        T r;
        try {
            r = rpc.get();
        } catch (StatusRuntimeException e) {
            throw new FlussRpcException(FlussRpcException.NETWORK_EXCEPTION, what + " failed: " + e.getStatus());
        }
        if (r instanceof Message) {
            checkResponse((Message) r, what);
        }
        return r;
    }

    /** Throws the request-level error of a response (its {@code error} field), if it has one. */
    public static <M extends Message> M checkResponse(M response, String what) {
        FlussRpcException.check(errorOf(response), what);
        return response;
    }

    /**
     * Shuts the channels, the event loop group and the executor down and waits (up to 5 s each, also when the
     * calling thread is interrupted, as a cancelled task's is) until their threads have ended.
     */
    @Override
    public synchronized void close() {
        boolean interrupted = Thread.interrupted();
        try {
            List<ManagedChannel> all = new ArrayList<>(tablets.values());
            tablets.clear();
            for (int i = 0; i < coordinators.length; i++) {
                if (coordinators[i] != null) {
                    all.add(coordinators[i]);
                    coordinators[i] = null;
                }
            }
            for (ManagedChannel c : all) {
                c.shutdownNow();
            }
            for (ManagedChannel c : all) {
                interrupted |= ChannelFactory.awaitQuietly(ms -> c.awaitTermination(ms, TimeUnit.MILLISECONDS));
            }
            channels.close();
            interrupted |= Thread.interrupted();
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
