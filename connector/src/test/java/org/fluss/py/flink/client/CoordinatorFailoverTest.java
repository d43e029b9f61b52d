package org.fluss.py.flink.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import org.fluss.py.rpc.AdminServiceGrpc;
import org.fluss.py.rpc.ErrorInfo;
import org.fluss.py.rpc.ListDatabasesRequest;
import org.fluss.py.rpc.ListDatabasesResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Coordinator calls go to whichever bootstrap address is the active coordinator, as in the Python client. */
class CoordinatorFailoverTest {
    private final List<Server> servers = new ArrayList<>();

    /** A coordinator on loopback: active ones list {@code name}, standbys answer INVALID_COORDINATOR. */
    private static final class FakeCoordinator extends AdminServiceGrpc.AdminServiceImplBase {
        final String name;
        volatile boolean active;
        final AtomicInteger calls = new AtomicInteger();

        FakeCoordinator(String name, boolean active) {
            this.name = name;
            this.active = active;
        }

        @Override
        public void listDatabases(ListDatabasesRequest request, StreamObserver<ListDatabasesResponse> out) {
            calls.incrementAndGet();
            ListDatabasesResponse.Builder r = ListDatabasesResponse.newBuilder();
            if (active) {
                r.addDatabaseNames(name);
            } else {
                r.setError(ErrorInfo.newBuilder().setCode(FlussRpcException.INVALID_COORDINATOR)
                        .setMessage("coordinator " + name + " is a standby"));
            }
            out.onNext(r.build());
            out.onCompleted();
        }
    }

    private int serve(FakeCoordinator c) throws Exception {
        Server s = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(c).build().start();
        servers.add(s);
        return s.getPort();
    }

    private static int closedPort() throws Exception {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static List<String> listDatabases(FlussClient client) {
        return client.adminCall(a -> a.listDatabases(ListDatabasesRequest.getDefaultInstance()), "ListDatabases")
                .getDatabaseNamesList();
    }

    @AfterEach
    void stop() throws Exception {
        for (Server s : servers) {
            s.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void skipsDeadAddressesAndStandbysAndSticksToTheActiveCoordinator() throws Exception {
        FakeCoordinator standby = new FakeCoordinator("standby", false);
        FakeCoordinator active = new FakeCoordinator("active", true);
        String bootstrap = "127.0.0.1:" + closedPort() + ",127.0.0.1:" + serve(standby) + ",127.0.0.1:" + serve(active);
        try (FlussClient client = new FlussClient(bootstrap, 20_000L)) {
            assertEquals(List.of("active"), listDatabases(client));
            assertEquals(List.of("active"), listDatabases(client));
            assertEquals(1, standby.calls.get(), "the second call goes straight to the coordinator that answered");
            assertEquals(2, active.calls.get());
            // failover: the active one steps down, the standby takes over
            active.active = false;
            standby.active = true;
            assertEquals(List.of("standby"), listDatabases(client));
        }
    }

    @Test
    void failsNamingTheLastErrorWhenNoCoordinatorIsActive() throws Exception {
        // the first gRPC call of a JVM loads Netty and can take seconds on a busy machine: not under test here
        try (FlussClient warm = new FlussClient("127.0.0.1:" + serve(new FakeCoordinator("warm", true)), 60_000L,
                60_000L)) {
            listDatabases(warm);
        }
        FakeCoordinator standby = new FakeCoordinator("standby", false);
        try (FlussClient client = new FlussClient("127.0.0.1:" + serve(standby), 3_000L)) {
            FlussRpcException e = assertThrows(FlussRpcException.class, () -> listDatabases(client));
            assertEquals(FlussRpcException.INVALID_COORDINATOR, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("standby"), e.getMessage());
        }
    }

    @Test
    void anUnreachableClusterFailsWithinTheConnectTimeoutNamingAddressAndCause() throws Exception {
        String dead = "127.0.0.1:" + closedPort();
        long start = System.nanoTime();
        try (FlussClient client = new FlussClient(dead, 30_000L, 1_000L)) {
            FlussRpcException e = assertThrows(FlussRpcException.class, client::checkReachable);
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(waitedMs < 5_000, "waited " + waitedMs + " ms, not the 30 s request timeout");
            assertTrue(e.getMessage().contains("Cannot connect to the Fluss cluster"), e.getMessage());
            assertTrue(e.getMessage().contains(dead + ": connection refused"), e.getMessage());
        }
        try (FlussClient client = new FlussClient("no-such-host.invalid:9123", 30_000L, 1_000L)) {
            FlussRpcException e = assertThrows(FlussRpcException.class, client::checkReachable);
            assertTrue(e.getMessage().contains("unknown host 'no-such-host.invalid'"), e.getMessage());
        }
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> new FlussClient("127.0.0.1"));
        assertTrue(bad.getMessage().contains("'127.0.0.1'"), bad.getMessage());
    }
}
