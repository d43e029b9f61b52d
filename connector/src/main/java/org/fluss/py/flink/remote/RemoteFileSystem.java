package org.fluss.py.flink.remote;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Map;

/**
 * Reads files of remote storage ({@code remote.data.dir}): a local path or {@code file://} URL, or {@code s3://}
 * (see {@link S3FileSystem}); the Java side of {@code fluss/fs/__init__.py}. Chosen by the URL's scheme.
 */
public interface RemoteFileSystem extends AutoCloseable {
    /**
     * Copies the file at {@code url} to {@code target}.
     *
     * @throws NoSuchFileException when it does not exist
     */
    void download(String url, Path target) throws IOException;

    @Override
    default void close() {}

    /** The scheme of a URL ({@code file} for a plain path). */
    static String schemeOf(String url) {
        int i = url.indexOf("://");
        return i < 0 ? "file" : url.substring(0, i).toLowerCase();
    }

    /** The file system for a URL, with Fluss's {@code s3.*} options for S3. */
    static RemoteFileSystem forUrl(String url, Map<String, String> options) {
        String scheme = schemeOf(url);
        switch (scheme) {
            case "file":
                return new LocalFileSystem();
            case "s3":
            case "s3a":
                return new S3FileSystem(options);
            default:
                throw new IllegalArgumentException("Remote storage scheme '" + scheme + "' of " + url
                        + " is not supported by the Flink connector (file, s3)");
        }
    }

    /** Local paths and {@code file://} URLs. */
    final class LocalFileSystem implements RemoteFileSystem {
        @Override
        public void download(String url, Path target) throws IOException {
            String path = url.startsWith("file://") ? url.substring("file://".length()) : url;
            Files.copy(Paths.get(path), target, StandardCopyOption.REPLACE_EXISTING);
        }
    }
}
