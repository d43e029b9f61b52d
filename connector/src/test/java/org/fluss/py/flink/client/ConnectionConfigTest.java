package org.fluss.py.flink.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Map;

/** Fluss's client security options become a connection (and the PLAIN token the Python servers read). */
class ConnectionConfigTest {
    private static ConnectionConfig from(Map<String, String> options, ConnectionConfig fallback) {
        return ConnectionConfig.from("h:1", Configuration.fromMap(options), fallback);
    }

    @Test
    void plaintextByDefaultAndSaslWithUsernameAndPassword() {
        assertFalse(from(Map.of(), null).isSasl());
        ConnectionConfig c = from(Map.of("client.security.protocol", "sasl", "client.security.sasl.username", "alice",
                "client.security.sasl.password", "alice-secret"), null);
        assertTrue(c.isSasl());
        assertEquals(ConnectionConfig.sasl("h:1", "alice", "alice-secret"), c);
        assertFalse(c.toString().contains("alice-secret"), c.toString());
        assertEquals(1, c.interceptors().size());
    }

    @Test
    void theJaasFormGivesTheCredentials() {
        ConnectionConfig c = from(Map.of("client.security.protocol", "SASL", "client.security.sasl.jaas.config",
                "org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required username=\"bob\" "
                        + "password=\"b\\\"s\";"), null);
        assertEquals(ConnectionConfig.sasl("h:1", "bob", "b\"s"), c);
    }

    @Test
    void aTableWithoutSecurityOptionsUsesTheCatalogs() {
        ConnectionConfig catalog = ConnectionConfig.sasl("c:1", "alice", "pw");
        assertEquals(ConnectionConfig.sasl("h:1", "alice", "pw"), from(Map.of(), catalog));
        assertFalse(from(Map.of("client.security.protocol", "PLAINTEXT"), catalog).isSasl());
    }

    @Test
    void incompleteOrUnsupportedSettingsNameTheOption() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> from(Map.of("client.security.protocol", "SASL"), null));
        assertTrue(e.getMessage().contains("client.security.sasl.username"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> from(Map.of("client.security.protocol", "SSL"), null));
        assertTrue(e.getMessage().contains("client.security.protocol"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> from(Map.of("client.security.protocol", "SASL",
                "client.security.sasl.mechanism", "GSSAPI", "client.security.sasl.username", "a",
                "client.security.sasl.password", "b"), null));
        assertTrue(e.getMessage().contains("client.security.sasl.mechanism"), e.getMessage());
    }

    @Test
    void tlsSettingsTravelWithTheConnectionAndFilesAreChecked(@org.junit.jupiter.api.io.TempDir Path dir)
            throws IOException {
        Path ca = Files.writeString(dir.resolve("ca.crt"), "-----BEGIN CERTIFICATE-----\n");
        assertFalse(from(Map.of(), null).isTls());
        ConnectionConfig c = from(Map.of("client.security.protocol", "SASL", "client.security.sasl.username", "a",
                "client.security.sasl.password", "b", "client.security.ssl.enabled", "true",
                "client.security.ssl.truststore.path", ca.toString()), null);
        assertTrue(c.isTls() && c.isSasl());
        assertTrue(c.toString().contains("TLS"), c.toString());
        // a table without its own settings inherits the catalog's TLS too
        assertTrue(from(Map.of(), c).isTls());
        assertFalse(from(Map.of("client.security.ssl.enabled", "false"), c).isTls());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> from(Map.of(
                "client.security.ssl.enabled", "true", "client.security.ssl.truststore.path",
                dir.resolve("missing.crt").toString()), null));
        assertTrue(e.getMessage().contains("client.security.ssl.truststore.path"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> from(Map.of("client.security.ssl.enabled", "true",
                "client.security.ssl.certificate.path", ca.toString()), null));
        assertTrue(e.getMessage().contains("client.security.ssl.key.path"), e.getMessage());
    }

    @Test
    void thePlainTokenIsTheRfc4616InitialResponse() {
        String token = Base64.getEncoder().encodeToString("\0alice\0pw".getBytes());
        ConnectionConfig c = ConnectionConfig.sasl("h:1", "alice", "pw");
        // the token the interceptor sends is the one fluss/rpc/sasl.py's plain_token("alice", "pw") makes
        assertEquals(token, c.plainTokenForTest());
    }
}
