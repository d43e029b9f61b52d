"""Client configuration: the official Python client's ``Config`` (Fluss client keys, un-prefixed;
``client.``-prefixed keys as used in Flink options are accepted too)."""

from __future__ import annotations

from fluss.config_values import parse_bool, parse_duration_ms, parse_int, parse_memory_size
from fluss.record.log_batch import COMPRESSION_MIN_BATCH_BYTES

BOOTSTRAP_SERVERS = "bootstrap.servers"
WRITER_ACKS = "writer.acks"
WRITER_RETRIES = "writer.retries"
WRITER_BATCH_SIZE = "writer.batch-size"
WRITER_BATCH_TIMEOUT = "writer.batch-timeout"
WRITER_REQUEST_MAX_SIZE = "writer.request-max-size"
WRITER_ENABLE_IDEMPOTENCE = "writer.enable-idempotence"
WRITER_BUFFER_MEMORY_SIZE = "writer.buffer.memory-size"
WRITER_BUFFER_WAIT_TIMEOUT = "writer.buffer.wait-timeout"
WRITER_BUCKET_NO_KEY_ASSIGNER = "writer.bucket.no-key-assigner"
WRITER_DYNAMIC_CREATE_PARTITION = "writer.dynamic-create-partition.enabled"
WRITER_MAX_INFLIGHT_PER_BUCKET = "writer.max-inflight-requests-per-bucket"
# this client's own: a batch whose Arrow buffers hold fewer bytes is sent uncompressed (0: every batch compressed)
WRITER_COMPRESSION_MIN_BATCH_SIZE = "writer.compression.min-batch-size"
SCANNER_MAX_POLL_RECORDS = "scanner.log.max-poll-records"
SCANNER_FETCH_MAX_BYTES = "scanner.log.fetch.max-bytes"
SCANNER_FETCH_MAX_BYTES_FOR_BUCKET = "scanner.log.fetch.max-bytes-for-bucket"
SCANNER_FETCH_MIN_BYTES = "scanner.log.fetch.min-bytes"
SCANNER_FETCH_WAIT_MAX_TIME = "scanner.log.fetch.wait-max-time"
SCANNER_CHECK_CRC = "scanner.log.check-crc"
SCANNER_REMOTE_LOG_PREFETCH_NUM = "scanner.remote-log.prefetch-num"
SCANNER_IO_TMPDIR = "scanner.io.tmpdir"
REMOTE_FILE_DOWNLOAD_THREAD_NUM = "remote-file.download-thread-num"
LOOKUP_MAX_BATCH_SIZE = "lookup.max-batch-size"
LOOKUP_BATCH_TIMEOUT = "lookup.batch-timeout"
SECURITY_PROTOCOL = "security.protocol"
SECURITY_SASL_MECHANISM = "security.sasl.mechanism"
SECURITY_SASL_USERNAME = "security.sasl.username"
SECURITY_SASL_PASSWORD = "security.sasl.password"
SECURITY_SASL_JAAS_CONFIG = "security.sasl.jaas.config"
SECURITY_SSL_ENABLED = "security.ssl.enabled"
SECURITY_SSL_TRUSTSTORE = "security.ssl.truststore.path"
SECURITY_SSL_CERTIFICATE = "security.ssl.certificate.path"
SECURITY_SSL_KEY = "security.ssl.key.path"
CONNECT_TIMEOUT = "connect-timeout"
REQUEST_TIMEOUT = "request-timeout"
# Keys of the official client this one accepts without acting on them (docs/python-api-parity.md): it sizes
# batches by writer.batch-size alone, and reads each bucket's remote segments one at a time (the downloads run on
# remote-file.download-thread-num threads, scanner.remote-log.prefetch-num segments ahead).
WRITER_DYNAMIC_BATCH_SIZE_ENABLED = "writer.dynamic-batch-size.enabled"
WRITER_DYNAMIC_BATCH_SIZE_MIN = "writer.dynamic-batch-size-min"
SCANNER_REMOTE_LOG_READ_CONCURRENCY = "scanner.remote-log.read-concurrency"

DEFAULTS = {
    BOOTSTRAP_SERVERS: "127.0.0.1:9123",
    WRITER_ACKS: "all",
    WRITER_RETRIES: str(2**31 - 1),
    WRITER_BATCH_SIZE: "2mb",
    WRITER_BATCH_TIMEOUT: "100ms",
    WRITER_REQUEST_MAX_SIZE: "10mb",
    WRITER_ENABLE_IDEMPOTENCE: "true",
    WRITER_BUFFER_MEMORY_SIZE: "64mb",
    WRITER_BUFFER_WAIT_TIMEOUT: "2147483647ms",
    WRITER_BUCKET_NO_KEY_ASSIGNER: "STICKY",
    WRITER_DYNAMIC_CREATE_PARTITION: "true",
    WRITER_MAX_INFLIGHT_PER_BUCKET: "5",
    WRITER_COMPRESSION_MIN_BATCH_SIZE: f"{COMPRESSION_MIN_BATCH_BYTES // 1024}kb",
    SCANNER_MAX_POLL_RECORDS: "500",
    SCANNER_FETCH_MAX_BYTES: "16mb",
    SCANNER_FETCH_MAX_BYTES_FOR_BUCKET: "1mb",
    SCANNER_FETCH_MIN_BYTES: "1",
    SCANNER_FETCH_WAIT_MAX_TIME: "500ms",
    SCANNER_CHECK_CRC: "true",
    SCANNER_REMOTE_LOG_PREFETCH_NUM: "4",
    SCANNER_IO_TMPDIR: "",  # empty: <system temp dir>/fluss
    REMOTE_FILE_DOWNLOAD_THREAD_NUM: "3",
    LOOKUP_MAX_BATCH_SIZE: "128",
    LOOKUP_BATCH_TIMEOUT: "100ms",
    # how long a client keeps trying to reach a cluster none of whose bootstrap servers has answered yet
    CONNECT_TIMEOUT: "5s",
    REQUEST_TIMEOUT: "30s",
    WRITER_DYNAMIC_BATCH_SIZE_ENABLED: "true",
    WRITER_DYNAMIC_BATCH_SIZE_MIN: "256kb",
    SCANNER_REMOTE_LOG_READ_CONCURRENCY: "4",
    SECURITY_PROTOCOL: "PLAINTEXT",
    SECURITY_SASL_MECHANISM: "PLAIN",
    SECURITY_SASL_USERNAME: "",
    SECURITY_SASL_PASSWORD: "",
    SECURITY_SSL_ENABLED: "false",
}

_SECRET_MARKERS = ("password", "jaas")


def _prop(key: str, kind: str):
    def getter(self: Config):
        raw = self.get(key)
        if kind == "bytes":
            return parse_memory_size(raw, key)
        if kind == "ms":
            return parse_duration_ms(raw if not str(raw).isdigit() else f"{raw}ms", key)
        if kind == "int":
            return parse_int(raw, key)
        if kind == "bool":
            return parse_bool(raw, key)
        return raw

    def setter(self: Config, value) -> None:
        self.set(key, f"{value}ms" if kind == "ms" and isinstance(value, int) else value)

    return property(getter, setter)


class Config:
    """Client options; unknown keys are kept (and passed along) untouched."""

    def __init__(self, properties: dict[str, str] | None = None) -> None:
        self._props: dict[str, str] = {}
        for k, v in (properties or {}).items():
            self.set(k, v)

    def set(self, key: str, value: object) -> None:
        if key.startswith("client.") and key != "client.id":
            key = key[len("client."):]
        if key.endswith("-ms") and key[:-3] in DEFAULTS:  # the official client's form: "writer.batch-timeout-ms"
            key, value = key[:-3], f"{int(value)}ms"
        self._props[key] = str(value).lower() if isinstance(value, bool) else str(value)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._props.get(key, DEFAULTS.get(key, default))

    def to_dict(self) -> dict[str, str]:
        return {**DEFAULTS, **self._props}

    bootstrap_servers = _prop(BOOTSTRAP_SERVERS, "str")
    writer_acks = _prop(WRITER_ACKS, "str")
    writer_retries = _prop(WRITER_RETRIES, "int")
    writer_batch_size = _prop(WRITER_BATCH_SIZE, "bytes")
    writer_batch_timeout_ms = _prop(WRITER_BATCH_TIMEOUT, "ms")
    writer_request_max_size = _prop(WRITER_REQUEST_MAX_SIZE, "bytes")
    writer_enable_idempotence = _prop(WRITER_ENABLE_IDEMPOTENCE, "bool")
    writer_buffer_memory_size = _prop(WRITER_BUFFER_MEMORY_SIZE, "bytes")
    writer_buffer_wait_timeout_ms = _prop(WRITER_BUFFER_WAIT_TIMEOUT, "ms")
    writer_bucket_no_key_assigner = _prop(WRITER_BUCKET_NO_KEY_ASSIGNER, "str")
    writer_max_inflight_requests_per_bucket = _prop(WRITER_MAX_INFLIGHT_PER_BUCKET, "int")
    writer_dynamic_create_partition_enabled = _prop(WRITER_DYNAMIC_CREATE_PARTITION, "bool")
    writer_compression_min_batch_size = _prop(WRITER_COMPRESSION_MIN_BATCH_SIZE, "bytes")
    scanner_log_max_poll_records = _prop(SCANNER_MAX_POLL_RECORDS, "int")
    scanner_log_fetch_max_bytes = _prop(SCANNER_FETCH_MAX_BYTES, "bytes")
    scanner_log_fetch_max_bytes_for_bucket = _prop(SCANNER_FETCH_MAX_BYTES_FOR_BUCKET, "bytes")
    scanner_log_fetch_min_bytes = _prop(SCANNER_FETCH_MIN_BYTES, "bytes")
    scanner_log_fetch_wait_max_time_ms = _prop(SCANNER_FETCH_WAIT_MAX_TIME, "ms")
    scanner_log_check_crc = _prop(SCANNER_CHECK_CRC, "bool")
    scanner_remote_log_prefetch_num = _prop(SCANNER_REMOTE_LOG_PREFETCH_NUM, "int")
    scanner_io_tmpdir = _prop(SCANNER_IO_TMPDIR, "str")
    remote_file_download_thread_num = _prop(REMOTE_FILE_DOWNLOAD_THREAD_NUM, "int")
    lookup_max_batch_size = _prop(LOOKUP_MAX_BATCH_SIZE, "int")
    lookup_batch_timeout_ms = _prop(LOOKUP_BATCH_TIMEOUT, "ms")
    connect_timeout_ms = _prop(CONNECT_TIMEOUT, "ms")
    request_timeout_ms = _prop(REQUEST_TIMEOUT, "ms")
    writer_dynamic_batch_size_enabled = _prop(WRITER_DYNAMIC_BATCH_SIZE_ENABLED, "bool")
    writer_dynamic_batch_size_min = _prop(WRITER_DYNAMIC_BATCH_SIZE_MIN, "bytes")
    scanner_remote_log_read_concurrency = _prop(SCANNER_REMOTE_LOG_READ_CONCURRENCY, "int")
    security_protocol = _prop(SECURITY_PROTOCOL, "str")
    security_sasl_mechanism = _prop(SECURITY_SASL_MECHANISM, "str")
    security_sasl_username = _prop(SECURITY_SASL_USERNAME, "str")
    security_sasl_password = _prop(SECURITY_SASL_PASSWORD, "str")

    def credentials(self) -> tuple[str, str] | None:
        """``(username, password)`` when ``security.protocol`` is SASL (``client.security.*`` keys, or the username
        and password of ``security.sasl.jaas.config``); None for PLAINTEXT. INVALID_CONFIG_EXCEPTION naming the
        key for a protocol or mechanism this client does not speak, or a SASL setting without credentials."""
        from fluss.errors import ErrorCode, FlussError

        protocol = (self.get(SECURITY_PROTOCOL) or "PLAINTEXT").strip().upper()
        if protocol == "PLAINTEXT":
            return None
        if protocol != "SASL":
            raise FlussError(f"Unsupported client.security.protocol {protocol!r} (expected PLAINTEXT or SASL)",
                             ErrorCode.INVALID_CONFIG_EXCEPTION)
        mechanism = (self.get(SECURITY_SASL_MECHANISM) or "PLAIN").strip().upper()
        if mechanism != "PLAIN":
            raise FlussError(f"Unsupported client.security.sasl.mechanism {mechanism!r} (supported: PLAIN)",
                             ErrorCode.INVALID_CONFIG_EXCEPTION)
        username, password = self.get(SECURITY_SASL_USERNAME), self.get(SECURITY_SASL_PASSWORD)
        jaas = self.get(SECURITY_SASL_JAAS_CONFIG)
        if (not username or not password) and jaas:
            from fluss.rpc.jaas import parse_jaas_config

            parsed = parse_jaas_config(jaas, "client.security.sasl.jaas.config")
            username, password = username or parsed.username, password or parsed.password
        if not username or not password:
            raise FlussError("client.security.protocol is SASL: set client.security.sasl.username and "
                             "client.security.sasl.password (or client.security.sasl.jaas.config)",
                             ErrorCode.INVALID_CONFIG_EXCEPTION)
        return username, password

    def tls(self):
        """The TLS settings (:class:`fluss.rpc.tls.ClientTls`) when ``security.ssl.enabled`` is true, else None.
        The trust store, certificate and key are PEM files; INVALID_CONFIG_EXCEPTION naming the key for one that
        cannot be read or a certificate without its key."""
        from fluss.rpc.tls import ClientTls

        if not parse_bool(self.get(SECURITY_SSL_ENABLED), "client.security.ssl.enabled"):
            return None
        return ClientTls.from_files(self.get(SECURITY_SSL_TRUSTSTORE), self.get(SECURITY_SSL_CERTIFICATE),
                                    self.get(SECURITY_SSL_KEY), "client.security.ssl.")

    def __repr__(self) -> str:
        shown = {k: ("******" if any(m in k for m in _SECRET_MARKERS) else v) for k, v in self._props.items()}
        return f"Config({shown})"
