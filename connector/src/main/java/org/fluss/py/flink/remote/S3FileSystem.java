package org.fluss.py.flink.remote;

import software.amazon.awssdk.auth.credentials.AnonymousCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.ResponseTransformer;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * {@code s3://bucket/key} with Fluss's options: {@code s3.endpoint}, {@code s3.region} [us-east-1],
 * {@code s3.access-key}/{@code s3.secret-key} (else the default AWS credential chain), {@code s3.session-token},
 * {@code s3.path.style.access} (or {@code s3.path-style-access}). The AWS SDK's S3 client over the JDK's HTTP
 * connection.
 */
public final class S3FileSystem implements RemoteFileSystem {
    private final S3Client s3;

    public S3FileSystem(Map<String, String> options) {
        S3ClientBuilder builder = S3Client.builder()
                .httpClient(UrlConnectionHttpClient.builder().connectionTimeout(Duration.ofSeconds(10))
                        .socketTimeout(Duration.ofSeconds(60)).build())
                .region(Region.of(options.getOrDefault("s3.region", "us-east-1")))
                .credentialsProvider(credentials(options))
                .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(
                        truthy(options.get("s3.path.style.access")) || truthy(options.get("s3.path-style-access")))
                        .build());
        String endpoint = options.get("s3.endpoint");
        if (endpoint != null && !endpoint.isEmpty()) {
            builder.endpointOverride(URI.create(endpoint));
        }
        this.s3 = builder.build();
    }

    private static boolean truthy(String value) {
        return value != null && (value.equalsIgnoreCase("true") || value.equals("1"));
    }

    private static AwsCredentialsProvider credentials(Map<String, String> options) {
        String key = options.get("s3.access-key");
        String secret = options.get("s3.secret-key");
        String token = options.get("s3.session-token");
        if (key == null || key.isEmpty()) {
            return "true".equals(options.get("s3.anonymous")) ? AnonymousCredentialsProvider.create()
                    : DefaultCredentialsProvider.builder().build();
        }
        return StaticCredentialsProvider.create(token == null || token.isEmpty()
                ? AwsBasicCredentials.create(key, secret) : AwsSessionCredentials.create(key, secret, token));
    }

    @Override
    public void download(String url, Path target) throws IOException {
        URI uri = URI.create(url);
        String bucket = uri.getHost();
        String key = uri.getPath().startsWith("/") ? uri.getPath().substring(1) : uri.getPath();
        Files.deleteIfExists(target);
        try {
            s3.getObject(GetObjectRequest.builder().bucket(bucket).key(key).build(), ResponseTransformer.toFile(target));
        } catch (NoSuchKeyException e) {
            throw new NoSuchFileException(url);
        } catch (SdkException e) {
            throw new IOException("Reading " + url + " failed: " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        s3.close();
    }
}
