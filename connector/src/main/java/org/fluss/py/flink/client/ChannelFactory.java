package org.fluss.py.flink.client;

import io.grpc.ChannelCredentials;
import io.grpc.ClientInterceptor;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * The one way the connector makes gRPC channels, mirroring {@code fluss/rpc/channels.py}: the same options (message
 * size, keepalive, connect timeout) and a list of client interceptors every call passes (where credentials or a
 * client id will be added). Channels are built with the Netty builder directly (no ServiceLoader lookup inside a
 * shaded jar), on an event loop group and an executor of this factory, not gRPC's shared ones, which are destroyed a
 * second after their last user, by then possibly in a closed job class loader. {@link #close()} shuts the event loop
 * and the executor down and waits until their threads have ended, so none outlives a job's class loader.
 */
public final class ChannelFactory implements AutoCloseable {
    public static final int MAX_MESSAGE_BYTES = 256 * 1024 * 1024;
    public static final long KEEPALIVE_MS = 10_000L;

    private final List<ClientInterceptor> interceptors;
    private final ChannelCredentials credentials; // TLS or plaintext
    private final long connectTimeoutMs;
    private final Object resources = new Object(); // guards group and executor
    private EventLoopGroup group; // created with the first channel
    private ExecutorService executor;
    private final List<Thread> threads = new ArrayList<>(); // of group and executor, joined on close

    public ChannelFactory(List<ClientInterceptor> interceptors, long connectTimeoutMs) {
        this(interceptors, InsecureChannelCredentials.create(), connectTimeoutMs);
    }

    public ChannelFactory(List<ClientInterceptor> interceptors, ChannelCredentials credentials, long connectTimeoutMs) {
        this.interceptors = List.copyOf(interceptors);
        this.credentials = credentials;
        this.connectTimeoutMs = connectTimeoutMs;
    }

    private void start() {
        if (group == null) {
            group = new NioEventLoopGroup(2, recorded(new DefaultThreadFactory("fluss-client-netty", true)));
            executor = Executors.newCachedThreadPool(recorded(new DefaultThreadFactory("fluss-client-grpc", true)));
        }
    }

    /** The executor of this factory's channels (their callbacks); it ends with {@link #close()}. */
    public ExecutorService executor() {
        synchronized (resources) {
            start();
            return executor;
        }
    }

    public ManagedChannel channel(String host, int port) {
        synchronized (resources) {
            start();
            return NettyChannelBuilder.forAddress(new InetSocketAddress(host, port), credentials)
                    .eventLoopGroup(group)
                    .channelType(NioSocketChannel.class)
                    .executor(executor)
                    .offloadExecutor(executor)
                    .maxInboundMessageSize(MAX_MESSAGE_BYTES)
                    .keepAliveTime(KEEPALIVE_MS, TimeUnit.MILLISECONDS)
                    .withOption(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, connectTimeoutMs))
                    .intercept(interceptors)
                    .build();
        }
    }

    /** A thread factory that remembers its threads, so {@link #close()} can wait until they have ended. */
    private ThreadFactory recorded(ThreadFactory factory) {
        return r -> {
            Thread t = factory.newThread(r);
            synchronized (threads) {
                threads.add(t);
            }
            return t;
        };
    }

    /** Shuts the event loop group and the executor down (after the caller closed its channels) and joins them. */
    @Override
    public void close() {
        boolean interrupted = Thread.interrupted();
        try {
            synchronized (resources) {
                if (group != null) {
                    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5_000L);
                    ExecutorService e = executor;
                    e.shutdownNow();
                    interrupted |= awaitQuietly(ms -> e.awaitTermination(ms, TimeUnit.MILLISECONDS));
                    group = null;
                    executor = null;
                }
                // a terminated event loop still notifies its listeners (loading classes) as its thread ends
                List<Thread> ended;
                synchronized (threads) {
                    ended = new ArrayList<>(threads);
                    threads.clear();
                }
                for (Thread t : ended) {
                    if (t != Thread.currentThread()) {
                        interrupted |= awaitQuietly(ms -> {
                            t.join(ms);
                            return true;
                        });
                    }
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** A wait of at most the given milliseconds, which may be interrupted. */
    interface Wait {
        boolean await(long ms) throws InterruptedException;
    }

    /** Waits up to 5 s in total even if interrupted meanwhile; returns whether an interrupt was swallowed. */
    static boolean awaitQuietly(Wait wait) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        boolean interrupted = false;
        while (true) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                return interrupted;
            }
            try {
                wait.await(left);
                return interrupted;
            } catch (InterruptedException e) {
                interrupted = true; // a task being cancelled is interrupted, possibly repeatedly: wait on
            }
        }
    }
}
