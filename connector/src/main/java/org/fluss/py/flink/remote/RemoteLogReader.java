package org.fluss.py.flink.remote;

import org.fluss.py.flink.record.LogBatch;
import org.fluss.py.rpc.RemoteLogFetchInfoPb;
import org.fluss.py.rpc.RemoteLogSegmentPb;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * The remote (tiered) log reads of one split reader; the Java side of {@code fluss/client/remote_log.py}.
 *
 * <p>A FetchLog answer below a leader's local log start names remote segments ({@link #add}). Their data files
 * are downloaded ahead of reading on {@code downloadThreads} threads into a private temp directory; at most
 * {@code prefetchNum} segment files of this reader are on disk at once (the one being read included), and each is
 * deleted once read. Every download is a file of its own, even of a segment downloaded again (a split dropped and
 * added back while its download runs): deleting one copy never takes another. {@link #read} hands out whole batches of a split's current segment in chunks; a missing file,
 * a file of the wrong size or a batch failing its CRC fails the read with an {@link IOException} naming the
 * segment. When a split's segments are read, its reads go back to the leader.
 */
public final class RemoteLogReader implements AutoCloseable {
    static final int CHUNK_BYTES = 8 << 20;

    private final RemoteLogSettings settings;
    private final Supplier<Map<String, String>> options;
    private final ExecutorService pool;
    private final Path directory;
    private final Map<String, RemoteFileSystem> fileSystems = new HashMap<>();
    private final Map<String, SplitReads> splits = new LinkedHashMap<>();
    private final AtomicLong downloads = new AtomicLong(); // numbers each download's file

    /** A chunk of whole batches; {@code segmentEnd} is set when it ends the segment (-1 otherwise). */
    public record Chunk(byte[] data, long segmentEnd) {}

    private static final class Download {
        final RemoteSegment segment;
        final CompletableFuture<Path> file;
        long position;

        Download(RemoteSegment segment, CompletableFuture<Path> file, long position) {
            this.segment = segment;
            this.file = file;
            this.position = position;
        }
    }

    private static final class SplitReads {
        final Deque<RemoteSegment> waiting = new ArrayDeque<>();
        final Deque<Download> downloads = new ArrayDeque<>();
        int firstPosition;
    }

    public RemoteLogReader(RemoteLogSettings settings, Supplier<Map<String, String>> options) {
        this.settings = settings;
        this.options = options;
        this.pool = Executors.newFixedThreadPool(Math.max(1, settings.downloadThreads()), r -> {
            Thread t = new Thread(r, "fluss-remote-download");
            t.setDaemon(true);
            return t;
        });
        try {
            Path root = settings.tmpDir() == null || settings.tmpDir().isEmpty()
                    ? Paths.get(System.getProperty("java.io.tmpdir"), "fluss") : Paths.get(settings.tmpDir());
            Files.createDirectories(root);
            this.directory = Files.createTempDirectory(root, "remote-log-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public boolean has(String splitId) {
        return splits.containsKey(splitId);
    }

    /** Queues the segments of a FetchLog answer for a split. */
    public void add(String splitId, RemoteLogFetchInfoPb info) {
        drop(splitId);
        SplitReads reads = new SplitReads();
        reads.firstPosition = info.getFirstStartPos();
        for (RemoteLogSegmentPb s : info.getRemoteLogSegmentsList()) {
            reads.waiting.add(new RemoteSegment(info.getRemoteLogTabletDir(), s.getRemoteLogSegmentId(),
                    s.getRemoteLogStartOffset(), s.getRemoteLogEndOffset(), s.getSegmentSizeInBytes()));
        }
        if (!reads.waiting.isEmpty()) {
            splits.put(splitId, reads);
            schedule();
        }
    }

    public void drop(String splitId) {
        SplitReads reads = splits.remove(splitId);
        if (reads != null) {
            reads.downloads.forEach(RemoteLogReader::discard);
        }
    }

    private int onDisk() {
        return splits.values().stream().mapToInt(r -> r.downloads.size()).sum();
    }

    /** Starts downloads, round-robin over splits, while fewer than prefetchNum files are on disk. */
    private void schedule() {
        boolean progress = true;
        while (progress && onDisk() < Math.max(1, settings.prefetchNum())) {
            progress = false;
            for (SplitReads reads : splits.values()) {
                if (!reads.waiting.isEmpty() && onDisk() < Math.max(1, settings.prefetchNum())) {
                    RemoteSegment segment = reads.waiting.poll();
                    long position = reads.downloads.isEmpty() && reads.firstPosition > 0 ? reads.firstPosition : 0;
                    reads.firstPosition = 0;
                    reads.downloads.add(new Download(segment,
                            CompletableFuture.supplyAsync(() -> download(segment), pool), position));
                    progress = true;
                }
            }
        }
    }

    private Path download(RemoteSegment segment) {
        String name = segment.segmentId() + "-" + segment.startOffset() + "-" + downloads.getAndIncrement();
        Path target = directory.resolve(name + ".log");
        Path partial = directory.resolve(name + ".part");
        try {
            fileSystem(segment.url()).download(segment.url(), partial);
            long size = Files.size(partial);
            if (size != segment.size()) {
                Files.deleteIfExists(partial);
                throw new IOException("The " + segment.describe() + " has " + size
                        + " bytes, the remote log manifest says " + segment.size() + ": the file is damaged");
            }
            Files.move(partial, target);
            return target;
        } catch (NoSuchFileException e) {
            throw new UncheckedIOException(new IOException("The " + segment.describe()
                    + " does not exist in remote storage", e));
        } catch (IOException e) {
            try {
                Files.deleteIfExists(partial);
            } catch (IOException ignored) {
                // the directory is removed on close
            }
            throw new UncheckedIOException(e.getMessage() != null && e.getMessage().contains(segment.segmentId())
                    ? e : new IOException("Downloading the " + segment.describe() + " failed: " + e, e));
        }
    }

    private synchronized RemoteFileSystem fileSystem(String url) {
        return fileSystems.computeIfAbsent(RemoteFileSystem.schemeOf(url),
                scheme -> RemoteFileSystem.forUrl(url, options.get()));
    }

    /**
     * The next chunk of the split's current segment, waiting up to {@code waitMs} for its download; null when it
     * is not downloaded yet.
     */
    public Chunk read(String splitId, long waitMs) throws IOException {
        schedule();
        SplitReads reads = splits.get(splitId);
        if (reads == null || reads.downloads.isEmpty()) {
            return null;
        }
        Download head = reads.downloads.peek();
        Path file;
        try {
            file = head.file.get(waitMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("Interrupted while downloading the " + head.segment.describe(), e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() instanceof UncheckedIOException u ? u.getCause() : e.getCause();
            throw cause instanceof IOException io ? io : new IOException(cause);
        }
        byte[] data = readChunk(file, head);
        boolean done = head.position >= head.segment.size();
        if (done) {
            reads.downloads.poll();
            discard(head);
            if (reads.downloads.isEmpty() && reads.waiting.isEmpty()) {
                splits.remove(splitId);
            }
            schedule();
        }
        return new Chunk(data, done ? head.segment.endOffset() : -1L);
    }

    private static byte[] readChunk(Path file, Download d) throws IOException {
        RemoteSegment segment = d.segment;
        long remaining = segment.size() - d.position;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            int want = (int) Math.min(CHUNK_BYTES, remaining);
            if (remaining >= LogBatch.HEADER_SIZE) {
                ByteBuffer header = ByteBuffer.allocate(LogBatch.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
                ch.read(header, d.position);
                int length = header.getInt(16);
                if (length > want && length <= remaining) {
                    want = length; // a batch larger than a chunk is read whole
                }
            }
            ByteBuffer buf = ByteBuffer.allocate(want);
            while (buf.hasRemaining() && ch.read(buf, d.position + buf.position()) > 0) {
                // read on
            }
            byte[] data = buf.array();
            List<LogBatch.View> batches = LogBatch.parse(data);
            int used = 0;
            for (LogBatch.View b : batches) {
                if (!b.isValid()) {
                    throw new IOException("The " + segment.describe() + " is corrupt at byte " + (d.position + used)
                            + ": the batch at offset " + b.baseOffset + " fails its CRC32C check");
                }
                if (b.nextOffset() > segment.endOffset()) {
                    throw new IOException("The " + segment.describe() + " holds offset " + b.lastOffset()
                            + ", beyond its end");
                }
                used += b.length;
            }
            if (used == 0 && remaining > 0) {
                throw new IOException("The " + segment.describe() + " is corrupt at byte " + d.position
                        + ": no whole log batch there");
            }
            d.position += used;
            if (d.position >= segment.size() && !batches.isEmpty()
                    && batches.get(batches.size() - 1).nextOffset() != segment.endOffset()) {
                throw new IOException("The " + segment.describe() + " ends at offset "
                        + batches.get(batches.size() - 1).nextOffset() + ", the remote log manifest says "
                        + segment.endOffset());
            }
            return used == data.length ? data : java.util.Arrays.copyOf(data, used);
        }
    }

    private static void discard(Download d) {
        d.file.whenComplete((path, error) -> {
            if (path != null) {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException ignored) {
                    // the directory is removed on close
                }
            }
        });
    }

    @Override
    public void close() {
        pool.shutdownNow();
        synchronized (this) {
            fileSystems.values().forEach(RemoteFileSystem::close);
        }
        try (Stream<Path> files = Files.walk(directory)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // best effort
        }
    }
}
