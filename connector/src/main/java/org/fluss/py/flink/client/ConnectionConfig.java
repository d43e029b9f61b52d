package org.fluss.py.flink.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ChannelCredentials;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.InsecureChannelCredentials;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.TlsChannelCredentials;

import org.apache.flink.configuration.ReadableConfig;
import org.fluss.py.flink.FlussOptions;

import java.io.File;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where a cluster is and how to authenticate to it: {@code bootstrap.servers} and Fluss's client security options
 * ({@code client.security.protocol} PLAINTEXT | SASL, {@code client.security.sasl.mechanism} PLAIN,
 * {@code client.security.sasl.username} / {@code .password}, or the JAAS form
 * {@code client.security.sasl.jaas.config}). Serializable, so sources, sinks and lookups carry it to the task
 * managers. With SASL every call carries the PLAIN token in the request metadata, as the Python client does
 * ({@code fluss/rpc/sasl.py}). With {@code client.security.ssl.enabled} the channels are TLS channels (gRPC's TLS),
 * trusting the CAs of {@code client.security.ssl.truststore.path} (default: the JVM's) and showing the client
 * certificate of {@code client.security.ssl.certificate.path} / {@code .key.path} when given; the files must exist
 * where the job runs (every task manager). {@link #toString()} never shows the password.
 */
public final class ConnectionConfig implements Serializable {
    private static final long serialVersionUID = 1L;
    static final Metadata.Key<String> MECHANISM_KEY =
            Metadata.Key.of("fluss-sasl-mechanism", Metadata.ASCII_STRING_MARSHALLER);
    static final Metadata.Key<String> PLAIN_KEY = Metadata.Key.of("fluss-sasl-plain", Metadata.ASCII_STRING_MARSHALLER);
    private static final Pattern JAAS_OPTION = Pattern.compile("(username|password)\\s*=\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");

    private final String bootstrapServers;
    private final String username; // null: PLAINTEXT
    private final String password;
    private final Tls tls; // null: no TLS

    /** TLS files (PEM paths; null: not given). */
    public record Tls(String truststorePath, String certificatePath, String keyPath) implements Serializable {
        private static final long serialVersionUID = 1L;
    }

    private ConnectionConfig(String bootstrapServers, String username, String password, Tls tls) {
        this.bootstrapServers = bootstrapServers;
        this.username = username;
        this.password = password;
        this.tls = tls;
    }

    /** A plaintext (unauthenticated) connection. */
    public static ConnectionConfig plaintext(String bootstrapServers) {
        return new ConnectionConfig(bootstrapServers, null, null, null);
    }

    /** SASL/PLAIN as {@code username}. */
    public static ConnectionConfig sasl(String bootstrapServers, String username, String password) {
        if (username == null || username.isEmpty() || password == null) {
            throw new IllegalArgumentException("SASL needs a username and a password");
        }
        return new ConnectionConfig(bootstrapServers, username, password, null);
    }

    /** The same connection over TLS with these files ({@code tls} null: without TLS). */
    public ConnectionConfig withTls(Tls tls) {
        return new ConnectionConfig(bootstrapServers, username, password, tls);
    }

    public boolean isTls() {
        return tls != null;
    }

    /** The TLS settings of {@code options} (null when {@code client.security.ssl.enabled} is false). */
    static Tls tlsFrom(ReadableConfig options) {
        if (!options.get(FlussOptions.CLIENT_SECURITY_SSL_ENABLED)) {
            return null;
        }
        String trust = readable(options, FlussOptions.CLIENT_SECURITY_SSL_TRUSTSTORE_PATH.key(),
                options.getOptional(FlussOptions.CLIENT_SECURITY_SSL_TRUSTSTORE_PATH).orElse(null));
        String cert = readable(options, FlussOptions.CLIENT_SECURITY_SSL_CERTIFICATE_PATH.key(),
                options.getOptional(FlussOptions.CLIENT_SECURITY_SSL_CERTIFICATE_PATH).orElse(null));
        String key = readable(options, FlussOptions.CLIENT_SECURITY_SSL_KEY_PATH.key(),
                options.getOptional(FlussOptions.CLIENT_SECURITY_SSL_KEY_PATH).orElse(null));
        if ((cert == null) != (key == null)) {
            throw new IllegalArgumentException("Set both 'client.security.ssl.certificate.path' and "
                    + "'client.security.ssl.key.path' (a client certificate needs its key), or neither");
        }
        return new Tls(trust, cert, key);
    }

    private static String readable(ReadableConfig options, String key, String path) {
        if (path == null || path.isBlank()) {
            return null;
        }
        if (!Files.isReadable(Path.of(path.trim()))) {
            throw new IllegalArgumentException("'" + key + "' names " + path + ", which cannot be read");
        }
        return path.trim();
    }

    /**
     * From table or catalog options; {@code fallback} (the catalog's settings, may be null) supplies the security
     * options the table does not set. Throws IllegalArgumentException naming the option that is wrong.
     */
    public static ConnectionConfig from(String bootstrapServers, ReadableConfig options, ConnectionConfig fallback) {
        boolean own = options.getOptional(FlussOptions.CLIENT_SECURITY_PROTOCOL).isPresent();
        boolean ownTls = options.getOptional(FlussOptions.CLIENT_SECURITY_SSL_ENABLED).isPresent();
        Tls tls = ownTls || fallback == null ? tlsFrom(options) : fallback.tls;
        if (!own && fallback != null) {
            return new ConnectionConfig(bootstrapServers, fallback.username, fallback.password, tls);
        }
        String protocol = options.get(FlussOptions.CLIENT_SECURITY_PROTOCOL).trim().toUpperCase(Locale.ROOT);
        if (protocol.equals("PLAINTEXT")) {
            return plaintext(bootstrapServers).withTls(tls);
        }
        if (!protocol.equals("SASL")) {
            throw new IllegalArgumentException("Unsupported 'client.security.protocol' " + protocol
                    + " (expected PLAINTEXT or SASL)");
        }
        String mechanism = options.get(FlussOptions.CLIENT_SECURITY_SASL_MECHANISM).trim().toUpperCase(Locale.ROOT);
        if (!mechanism.equals("PLAIN")) {
            throw new IllegalArgumentException("Unsupported 'client.security.sasl.mechanism' " + mechanism
                    + " (supported: PLAIN)");
        }
        String user = options.getOptional(FlussOptions.CLIENT_SECURITY_SASL_USERNAME).orElse(null);
        String pass = options.getOptional(FlussOptions.CLIENT_SECURITY_SASL_PASSWORD).orElse(null);
        String jaas = options.getOptional(FlussOptions.CLIENT_SECURITY_SASL_JAAS_CONFIG).orElse(null);
        if ((user == null || pass == null) && jaas != null) {
            Matcher m = JAAS_OPTION.matcher(jaas);
            while (m.find()) {
                String value = m.group(2).replaceAll("\\\\(.)", "$1");
                if (m.group(1).equals("username") && user == null) {
                    user = value;
                } else if (m.group(1).equals("password") && pass == null) {
                    pass = value;
                }
            }
        }
        if (user == null || user.isEmpty() || pass == null) {
            throw new IllegalArgumentException("'client.security.protocol' is SASL: set "
                    + "'client.security.sasl.username' and 'client.security.sasl.password' (or "
                    + "'client.security.sasl.jaas.config')");
        }
        return new ConnectionConfig(bootstrapServers, user, pass, tls);
    }

    public String bootstrapServers() {
        return bootstrapServers;
    }

    public boolean isSasl() {
        return username != null;
    }

    /** The same security towards other bootstrap servers. */
    public ConnectionConfig withBootstrapServers(String servers) {
        return new ConnectionConfig(servers, username, password, tls);
    }

    /** How channels connect: TLS with the configured files, or plaintext. */
    ChannelCredentials channelCredentials() {
        if (tls == null) {
            return InsecureChannelCredentials.create();
        }
        TlsChannelCredentials.Builder builder = TlsChannelCredentials.newBuilder();
        try {
            if (tls.truststorePath() != null) {
                builder.trustManager(new File(tls.truststorePath()));
            }
            if (tls.certificatePath() != null) {
                builder.keyManager(new File(tls.certificatePath()), new File(tls.keyPath()));
            }
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException("Cannot use the TLS files of 'client.security.ssl.*' ("
                    + e.getMessage() + ")", e);
        }
        return builder.build();
    }

    /** RFC 4616: base64 of {@code NUL username NUL password} (no authorization id). */
    private String plainToken() {
        byte[] user = username.getBytes(StandardCharsets.UTF_8);
        byte[] pass = password.getBytes(StandardCharsets.UTF_8);
        byte[] raw = new byte[user.length + pass.length + 2];
        System.arraycopy(user, 0, raw, 1, user.length);
        System.arraycopy(pass, 0, raw, user.length + 2, pass.length);
        return Base64.getEncoder().encodeToString(raw);
    }

    String plainTokenForTest() {
        return plainToken();
    }

    /** The client interceptors every call of a channel passes (the SASL credentials, if any). */
    List<ClientInterceptor> interceptors() {
        if (username == null) {
            return List.of();
        }
        String token = plainToken();
        return List.of(new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options,
                                                         Channel next) {
                return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
                    @Override
                    public void start(Listener<R> listener, Metadata headers) {
                        headers.put(MECHANISM_KEY, "PLAIN");
                        headers.put(PLAIN_KEY, token);
                        super.start(listener, headers);
                    }
                };
            }
        });
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConnectionConfig c && Objects.equals(bootstrapServers, c.bootstrapServers)
                && Objects.equals(username, c.username) && Objects.equals(password, c.password)
                && Objects.equals(tls, c.tls);
    }

    @Override
    public int hashCode() {
        return Objects.hash(bootstrapServers, username);
    }

    @Override
    public String toString() {
        return bootstrapServers + (username == null ? " (PLAINTEXT" : " (SASL/PLAIN as " + username)
                + (tls == null ? ")" : ", TLS)");
    }
}
