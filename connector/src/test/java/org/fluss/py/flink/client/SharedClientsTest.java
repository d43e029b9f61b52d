package org.fluss.py.flink.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import org.fluss.py.rpc.AdminServiceGrpc;
import org.fluss.py.rpc.ListDatabasesRequest;
import org.fluss.py.rpc.ListDatabasesResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The sink writers' shared clients: one per connection, counted, lingering only on the JVM's class path. */
class SharedClientsTest {
    private Server server;

    private static final class Coordinator extends AdminServiceGrpc.AdminServiceImplBase {
        final AtomicInteger calls = new AtomicInteger();

        @Override
        public void listDatabases(ListDatabasesRequest request, StreamObserver<ListDatabasesResponse> out) {
            calls.incrementAndGet();
            out.onNext(ListDatabasesResponse.newBuilder().addDatabaseNames("db").build());
            out.onCompleted();
        }
    }

    private ConnectionConfig serve(Coordinator c) throws Exception {
        server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(c).build().start();
        return ConnectionConfig.plaintext("127.0.0.1:" + server.getPort());
    }

    private static List<String> listDatabases(FlussClient client) {
        return client.adminCall(a -> a.listDatabases(ListDatabasesRequest.getDefaultInstance()), "ListDatabases")
                .getDatabaseNamesList();
    }

    @AfterEach
    void stop() throws Exception {
        SharedClients.closeUnused();
        if (server != null) {
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void oneClientPerConnection() {
        int before = SharedClients.openClients();
        try (SharedClients.Lease a = SharedClients.acquire(ConnectionConfig.plaintext("127.0.0.1:1"));
             SharedClients.Lease b = SharedClients.acquire(ConnectionConfig.plaintext("127.0.0.1:1"));
             SharedClients.Lease c = SharedClients.acquire(ConnectionConfig.plaintext("127.0.0.1:2"));
             SharedClients.Lease d = SharedClients.acquire(ConnectionConfig.sasl("127.0.0.1:1", "u", "p"))) {
            assertSame(a.client(), b.client());
            assertNotSame(a.client(), c.client());
            assertNotSame(a.client(), d.client()); // other credentials: another client
            assertEquals(before + 3, SharedClients.openClients());
        }
        // surefire loads these classes from the class path: released clients linger until closed
        assertTrue(SharedClients.LINGER);
        assertEquals(before + 3, SharedClients.openClients());
        SharedClients.closeUnused();
        assertEquals(0, SharedClients.openClients());
    }

    @Test
    void aLingeringClientIsPickedUpAndStillAnswers() throws Exception {
        Coordinator coordinator = new Coordinator();
        ConnectionConfig connection = serve(coordinator);
        FlussClient first;
        try (SharedClients.Lease lease = SharedClients.acquire(connection)) {
            first = lease.client();
            assertEquals(List.of("db"), listDatabases(first));
        }
        try (SharedClients.Lease lease = SharedClients.acquire(connection)) {
            assertSame(first, lease.client()); // the next job's writer gets the same channels
            assertEquals(List.of("db"), listDatabases(lease.client()));
        }
        assertEquals(2, coordinator.calls.get());
    }

    @Test
    void aClientInUseIsNotClosedAndALeaseReleasesOnce() throws Exception {
        ConnectionConfig connection = serve(new Coordinator());
        SharedClients.Lease a = SharedClients.acquire(connection);
        SharedClients.Lease b = SharedClients.acquire(connection);
        a.close();
        a.close(); // a second close must not release b's use
        SharedClients.closeUnused();
        assertEquals(1, SharedClients.openClients());
        assertEquals(List.of("db"), listDatabases(b.client()));
        b.close();
        SharedClients.closeUnused();
        assertEquals(0, SharedClients.openClients());
    }

    @Test
    void clientsLingerOnlyWhenLoadedFromTheClassPath() throws Exception {
        assertTrue(SharedClients.lingers(ClassLoader.getSystemClassLoader()));
        try (URLClassLoader jobLoader = new URLClassLoader(new URL[0], ClassLoader.getSystemClassLoader())) {
            assertFalse(SharedClients.lingers(jobLoader)); // a job's class loader: close with the last user
        }
    }
}
