package org.fluss.py.flink;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.MemorySize;
import org.fluss.py.flink.sink.SinkSettings;

import java.time.Duration;

/**
 * Option keys of the catalog and the table factory (Fluss's keys, see ../docs/flink-connector.md). Every key here is
 * declared, with the same type and default, in the Python option registries ({@link OptionsRegistry}); a test
 * checks it.
 */
public final class FlussOptions {
    private FlussOptions() {}

    public static final String IDENTIFIER = "fluss";

    public static final ConfigOption<String> BOOTSTRAP_SERVERS = ConfigOptions.key("bootstrap.servers")
            .stringType().noDefaultValue()
            .withDescription("Coordinator address(es) host:port[,host:port].");

    /** How long the catalog keeps trying to reach a cluster none of whose bootstrap servers has answered yet. */
    public static final ConfigOption<Duration> CLIENT_CONNECT_TIMEOUT = ConfigOptions.key("client.connect-timeout")
            .durationType().defaultValue(Duration.ofSeconds(5))
            .withDescription("How long to keep trying an unreachable bootstrap.servers before failing.");

    public static final ConfigOption<String> CLIENT_SECURITY_PROTOCOL = ConfigOptions.key("client.security.protocol")
            .stringType().defaultValue("PLAINTEXT").withDescription("PLAINTEXT or SASL.");
    public static final ConfigOption<String> CLIENT_SECURITY_SASL_MECHANISM =
            ConfigOptions.key("client.security.sasl.mechanism").stringType().defaultValue("PLAIN")
                    .withDescription("The SASL mechanism (PLAIN).");
    public static final ConfigOption<String> CLIENT_SECURITY_SASL_USERNAME =
            ConfigOptions.key("client.security.sasl.username").stringType().noDefaultValue();
    public static final ConfigOption<String> CLIENT_SECURITY_SASL_PASSWORD =
            ConfigOptions.key("client.security.sasl.password").stringType().noDefaultValue();
    public static final ConfigOption<String> CLIENT_SECURITY_SASL_JAAS_CONFIG =
            ConfigOptions.key("client.security.sasl.jaas.config").stringType().noDefaultValue()
                    .withDescription("JAAS form of the credentials: '...PlainLoginModule required username=\"..\" "
                            + "password=\"..\";'.");
    public static final ConfigOption<Boolean> CLIENT_SECURITY_SSL_ENABLED =
            ConfigOptions.key("client.security.ssl.enabled").booleanType().defaultValue(false)
                    .withDescription("Connect over TLS (the listener must be one of the servers' "
                            + "security.ssl.listeners).");
    public static final ConfigOption<String> CLIENT_SECURITY_SSL_TRUSTSTORE_PATH =
            ConfigOptions.key("client.security.ssl.truststore.path").stringType().noDefaultValue()
                    .withDescription("PEM file of the CA certificates to trust (default: the JVM's).");
    public static final ConfigOption<String> CLIENT_SECURITY_SSL_CERTIFICATE_PATH =
            ConfigOptions.key("client.security.ssl.certificate.path").stringType().noDefaultValue()
                    .withDescription("PEM client certificate chain, for listeners that require one.");
    public static final ConfigOption<String> CLIENT_SECURITY_SSL_KEY_PATH =
            ConfigOptions.key("client.security.ssl.key.path").stringType().noDefaultValue()
                    .withDescription("PEM (PKCS#8) private key of the client certificate.");

    public static final ConfigOption<String> DEFAULT_DATABASE = ConfigOptions.key("default-database")
            .stringType().defaultValue("fluss").withDescription("Default database of the catalog.");

    /** Outside a catalog: which Fluss table a 'connector'='fluss' table is (default: the Flink names). */
    public static final ConfigOption<String> DATABASE_NAME = ConfigOptions.key("database-name")
            .stringType().noDefaultValue();
    public static final ConfigOption<String> TABLE_NAME = ConfigOptions.key("table-name")
            .stringType().noDefaultValue();

    public static final ConfigOption<String> SCAN_STARTUP_MODE = ConfigOptions.key("scan.startup.mode")
            .stringType().defaultValue("full")
            .withDescription("full | earliest | latest | timestamp.");

    public static final ConfigOption<String> SCAN_STARTUP_TIMESTAMP = ConfigOptions.key("scan.startup.timestamp")
            .stringType().noDefaultValue()
            .withDescription("Epoch milliseconds or 'yyyy-MM-dd HH:mm:ss' (local time zone) for mode timestamp.");

    public static final ConfigOption<Duration> SCAN_PARTITION_DISCOVERY_INTERVAL =
            ConfigOptions.key("scan.partition.discovery.interval").durationType()
                    .defaultValue(Duration.ofMinutes(1));

    public static final ConfigOption<Integer> BUCKET_NUMBER = ConfigOptions.key("bucket.num").intType()
            .noDefaultValue();
    public static final ConfigOption<String> BUCKET_KEY = ConfigOptions.key("bucket.key").stringType()
            .noDefaultValue();

    public static final ConfigOption<String> CLIENT_WRITER_ACKS = ConfigOptions.key("client.writer.acks")
            .stringType().defaultValue("all");
    public static final ConfigOption<Integer> CLIENT_WRITER_RETRIES = ConfigOptions.key("client.writer.retries")
            .intType().defaultValue(Integer.MAX_VALUE);
    public static final ConfigOption<Boolean> CLIENT_WRITER_IDEMPOTENCE =
            ConfigOptions.key("client.writer.enable-idempotence").booleanType().defaultValue(true);
    public static final ConfigOption<String> CLIENT_WRITER_BUCKET_NO_KEY_ASSIGNER =
            ConfigOptions.key("client.writer.bucket.no-key-assigner").stringType().defaultValue("STICKY");
    public static final ConfigOption<Boolean> CLIENT_WRITER_DYNAMIC_CREATE_PARTITION =
            ConfigOptions.key("client.writer.dynamic-create-partition.enabled").booleanType().defaultValue(true);
    /** A batch whose Arrow buffers hold fewer bytes is sent uncompressed, whatever the table's codec (0: none is). */
    public static final ConfigOption<MemorySize> CLIENT_WRITER_COMPRESSION_MIN_BATCH_SIZE =
            ConfigOptions.key("client.writer.compression.min-batch-size").memoryType()
                    .defaultValue(new MemorySize(SinkSettings.DEFAULT_MIN_COMPRESSED_BYTES));
    /** Rows per Arrow batch per bucket before it is sent (besides checkpoints and the end of input). */
    public static final ConfigOption<Integer> SINK_BATCH_ROWS = ConfigOptions.key("sink.buffer-flush.max-rows")
            .intType().defaultValue(16384);
    public static final ConfigOption<MemorySize> CLIENT_SCANNER_FETCH_MAX_BYTES =
            ConfigOptions.key("client.scanner.log.fetch.max-bytes").memoryType()
                    .defaultValue(MemorySize.parse("16mb"));
    /** Fluss's key; the earlier {@code client.scanner.log.fetch.wait-max-time-ms} (milliseconds) still works. */
    public static final ConfigOption<Duration> CLIENT_SCANNER_FETCH_WAIT_MAX_TIME =
            ConfigOptions.key("client.scanner.log.fetch.wait-max-time").durationType()
                    .defaultValue(Duration.ofMillis(500))
                    .withFallbackKeys("client.scanner.log.fetch.wait-max-time-ms");

    /** Remote (tiered) log segments: how many a reader keeps downloaded ahead (on disk at most). */
    public static final ConfigOption<Integer> CLIENT_SCANNER_REMOTE_LOG_PREFETCH_NUM =
            ConfigOptions.key("client.scanner.remote-log.prefetch-num").intType().defaultValue(4);
    public static final ConfigOption<Integer> CLIENT_REMOTE_FILE_DOWNLOAD_THREAD_NUM =
            ConfigOptions.key("client.remote-file.download-thread-num").intType().defaultValue(3);
    /** Where downloaded remote segments are kept while read (unset: the JVM's temp dir + /fluss). */
    public static final ConfigOption<String> CLIENT_SCANNER_IO_TMPDIR =
            ConfigOptions.key("client.scanner.io.tmpdir").stringType().noDefaultValue();

    /** Drop DELETE (and UPDATE_BEFORE) rows instead of applying them. */
    public static final ConfigOption<Boolean> SINK_IGNORE_DELETE = ConfigOptions.key("sink.ignore-delete")
            .booleanType().defaultValue(false);
    /** Lookup joins run asynchronously (a small thread pool per task). */
    public static final ConfigOption<Boolean> LOOKUP_ASYNC = ConfigOptions.key("lookup.async").booleanType()
            .defaultValue(true);
}
