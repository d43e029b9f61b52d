package org.fluss.py.flink.client;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * One {@link FlussClient} per connection ({@link ConnectionConfig}: bootstrap servers, credentials, TLS) shared by
 * the connector's tasks in a JVM, so the sink writers of a job (and of the jobs that follow it) reuse one set of
 * gRPC channels, one event loop and one leader cache instead of each opening its own.
 *
 * <p>{@link #acquire} counts a user and {@link Lease#close} releases it. When the last user releases a client:
 * <ul>
 *   <li>if these classes were loaded by a job's class loader (the connector shipped as a job jar,
 *       {@code pipeline.jars}), the client is closed at once: its threads must not outlive that class loader;</li>
 *   <li>if they were loaded by the JVM's application class loader (the connector on Flink's class path, its
 *       {@code lib/}, as Flink installs connectors), the client stays open for {@link #LINGER_MS} and the next job's
 *       tasks pick it up (no new channels, no TLS/HTTP/2 handshakes, no cold gRPC code paths per job); it is closed
 *       when nobody has acquired it for that long. A client picked up after lingering forgets its cached leaders
 *       (callers refresh the metadata of what they write).</li>
 * </ul>
 * Each new user resets the channels' connection back-off, so a writer restarted after a server came back does not
 * wait out a back-off its predecessor ran into.
 */
public final class SharedClients {
    /** How long an unused client stays open when the connector is on the JVM's class path. */
    public static final long LINGER_MS = 60_000L;
    /** Whether unused clients linger: only when no job's class loader holds these classes. */
    static final boolean LINGER = lingers(SharedClients.class.getClassLoader());

    private static final Map<ConnectionConfig, Entry> CLIENTS = new HashMap<>();
    private static ScheduledThreadPoolExecutor closer; // created with the first lingering client (LINGER only)

    private SharedClients() {
    }

    private static final class Entry {
        final ConnectionConfig connection;
        final FlussClient client;
        int users;
        boolean idle; // released by every user at least once since it was created or picked up
        ScheduledFuture<?> pendingClose;

        Entry(ConnectionConfig connection) {
            this.connection = connection;
            this.client = new FlussClient(connection);
        }
    }

    /** A use of a shared client; {@link #close} releases it (once; later calls do nothing). */
    public static final class Lease implements AutoCloseable {
        private final Entry entry;
        private boolean released;

        private Lease(Entry entry) {
            this.entry = entry;
        }

        public FlussClient client() {
            return entry.client;
        }

        @Override
        public void close() {
            synchronized (this) {
                if (released) {
                    return;
                }
                released = true;
            }
            release(entry);
        }
    }

    /** The shared client of {@code connection} (created if there is none), counted as used until the lease closes. */
    public static Lease acquire(ConnectionConfig connection) {
        Entry e;
        boolean pickedUp;
        synchronized (CLIENTS) {
            e = CLIENTS.get(connection);
            if (e == null) {
                e = new Entry(connection);
                CLIENTS.put(connection, e);
            }
            pickedUp = e.idle && e.users == 0;
            e.idle = false;
            e.users++;
            if (e.pendingClose != null) {
                e.pendingClose.cancel(false);
                e.pendingClose = null;
            }
        }
        e.client.prepareForNewUser(pickedUp);
        return new Lease(e);
    }

    private static void release(Entry e) {
        boolean closeNow = false;
        synchronized (CLIENTS) {
            if (--e.users > 0) {
                return;
            }
            e.idle = true;
            if (LINGER) {
                if (closer == null) {
                    closer = new ScheduledThreadPoolExecutor(1, r -> {
                        Thread t = new Thread(r, "fluss-shared-client-closer");
                        t.setDaemon(true);
                        return t;
                    });
                    closer.setRemoveOnCancelPolicy(true);
                    closer.setKeepAliveTime(1, TimeUnit.SECONDS);
                    closer.allowCoreThreadTimeOut(true); // no thread while no client is lingering
                }
                e.pendingClose = closer.schedule(() -> closeIfUnused(e), LINGER_MS, TimeUnit.MILLISECONDS);
            } else {
                CLIENTS.remove(e.connection, e);
                closeNow = true;
            }
        }
        if (closeNow) {
            e.client.close(); // outside the lock: it waits for the client's threads to end
        }
    }

    private static void closeIfUnused(Entry e) {
        synchronized (CLIENTS) {
            if (e.users > 0 || !CLIENTS.remove(e.connection, e)) {
                return;
            }
        }
        e.client.close();
    }

    /** Whether clients of classes from {@code loader} may outlive their users: the JVM's class path only. */
    static boolean lingers(ClassLoader loader) {
        return loader == ClassLoader.getSystemClassLoader();
    }

    /** Clients open now (used or lingering); for tests. */
    static int openClients() {
        synchronized (CLIENTS) {
            return CLIENTS.size();
        }
    }

    /** Closes every client nobody uses (lingering ones) at once; for tests. */
    static void closeUnused() {
        Map<ConnectionConfig, Entry> unused = new HashMap<>();
        synchronized (CLIENTS) {
            for (Entry e : CLIENTS.values()) {
                if (e.users == 0) {
                    unused.put(e.connection, e);
                    if (e.pendingClose != null) {
                        e.pendingClose.cancel(false);
                    }
                }
            }
            unused.forEach(CLIENTS::remove);
        }
        unused.values().forEach(e -> e.client.close());
    }
}
