package org.fluss.py.flink.remote;

import org.fluss.py.flink.record.LogBatch;
import org.fluss.py.rpc.RemoteLogFetchInfoPb;
import org.fluss.py.rpc.RemoteLogSegmentPb;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Remote log segments in a local folder laid out as the tablet servers upload them: read in order from the first
 * segment's start position, at most prefetch-num files on disk, and a missing, short or corrupt segment fails
 * the read naming it.
 */
class RemoteLogReaderTest {
    @TempDir
    Path remote;
    @TempDir
    Path tmp;
    private RemoteLogReader reader;

    @BeforeEach
    void open() {
        reader = new RemoteLogReader(new RemoteLogSettings(2, 2, tmp.toString()), Map::of);
    }

    @AfterEach
    void close() {
        reader.close();
    }

    /** A segment of {@code batches} batches of 10 records from {@code start}; returns its descriptor. */
    private RemoteLogSegmentPb segment(String id, long start, int batches) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < batches; i++) {
            byte[] ipc = new byte[64]; // the body is not decoded here: only headers, lengths and CRCs matter
            out.write(LogBatch.build(ipc, null, 10, 1, LogBatch.COMPRESSION_NONE, -1L, -1, start + 10L * i, 1, 0L));
        }
        Path dir = Files.createDirectories(remote.resolve(id));
        Files.write(dir.resolve(String.format("%020d.log", start)), out.toByteArray());
        return RemoteLogSegmentPb.newBuilder().setRemoteLogSegmentId(id).setRemoteLogStartOffset(start)
                .setRemoteLogEndOffset(start + 10L * batches).setSegmentSizeInBytes(out.size()).build();
    }

    private RemoteLogFetchInfoPb info(RemoteLogSegmentPb... segments) {
        return RemoteLogFetchInfoPb.newBuilder().setRemoteLogTabletDir(remote.toString())
                .addAllRemoteLogSegments(List.of(segments)).build();
    }

    private List<Long> readAll(String split) throws IOException {
        List<Long> offsets = new ArrayList<>();
        while (reader.has(split)) {
            RemoteLogReader.Chunk chunk = reader.read(split, 10_000);
            assertNotNull(chunk);
            for (LogBatch.View b : LogBatch.parse(chunk.data())) {
                offsets.add(b.baseOffset);
            }
            assertTrue(filesOnDisk() <= 2, "prefetch-num bounds the files on disk");
        }
        return offsets;
    }

    /** Files under the temp dir (java.io listing: a download renamed meanwhile is not an error). */
    private long filesOnDisk() {
        return countFiles(tmp.toFile());
    }

    private static long countFiles(java.io.File dir) {
        java.io.File[] children = dir.listFiles();
        long n = 0;
        for (java.io.File f : children == null ? new java.io.File[0] : children) {
            n += f.isDirectory() ? countFiles(f) : 1;
        }
        return n;
    }

    @Test
    void segmentsAreReadInOrderAndDeletedOnceRead() throws IOException {
        reader.add("s", info(segment("a", 0, 5), segment("b", 50, 5), segment("c", 100, 3)));
        assertEquals(List.of(0L, 10L, 20L, 30L, 40L, 50L, 60L, 70L, 80L, 90L, 100L, 110L, 120L), readAll("s"));
        assertFalse(reader.has("s"));
        assertEquals(0, filesOnDisk());
    }

    @Test
    void aSegmentDownloadedTwiceIsTwoFilesAndEachReaderDeletesOnlyItsOwn() throws Exception {
        RemoteLogSegmentPb a = segment("a", 0, 3);
        reader.add("s", info(a));
        long deadline = System.currentTimeMillis() + 10_000;
        while (filesOnDisk() < 1 && System.currentTimeMillis() < deadline) {
            Thread.sleep(10); // the first download is on disk before the second starts
        }
        reader.add("t", info(a)); // used to download onto the first file's name and fail to move there
        assertEquals(List.of(0L, 10L, 20L), readAll("s"));
        assertEquals(List.of(0L, 10L, 20L), readAll("t"));
        assertEquals(0, filesOnDisk());
    }

    @Test
    void theFirstSegmentIsReadFromItsStartPosition() throws IOException {
        RemoteLogSegmentPb a = segment("a", 0, 5);
        int batch = (int) a.getSegmentSizeInBytes() / 5;
        reader.add("s", info(a).toBuilder().setFirstStartPos(2 * batch).build());
        assertEquals(List.of(20L, 30L, 40L), readAll("s"));
    }

    @Test
    void aMissingSegmentFailsTheReadNamingIt() throws IOException {
        RemoteLogSegmentPb a = segment("a", 0, 2);
        Files.delete(remote.resolve("a").resolve(String.format("%020d.log", 0)));
        reader.add("s", info(a));
        IOException e = assertThrows(IOException.class, () -> reader.read("s", 10_000));
        assertTrue(e.getMessage().contains("remote log segment a") && e.getMessage().contains("does not exist"),
                e.getMessage());
    }

    @Test
    void aShortOrCorruptSegmentFailsTheReadNamingIt() throws IOException {
        RemoteLogSegmentPb a = segment("a", 0, 3);
        reader.add("s", info(a.toBuilder().setSegmentSizeInBytes(a.getSegmentSizeInBytes() + 8).build()));
        IOException e = assertThrows(IOException.class, () -> reader.read("s", 10_000));
        assertTrue(e.getMessage().contains("segment a") && e.getMessage().contains("damaged"), e.getMessage());

        RemoteLogSegmentPb b = segment("b", 30, 3);
        Path file = remote.resolve("b").resolve(String.format("%020d.log", 30));
        byte[] bytes = Files.readAllBytes(file);
        bytes[bytes.length - 3] ^= 0x5a;
        Files.write(file, bytes);
        reader.add("t", info(b));
        e = assertThrows(IOException.class, () -> reader.read("t", 10_000));
        assertTrue(e.getMessage().contains("segment b") && e.getMessage().contains("corrupt"), e.getMessage());
    }
}
