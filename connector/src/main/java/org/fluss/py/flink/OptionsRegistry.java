package org.fluss.py.flink;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The option registries of the Python side ({@code fluss/table_options.py}), read from the resource
 * {@code options-registry.json} that {@code make options} writes: the table options (stored as table properties,
 * checked by the coordinator) and the connector options (read by this connector, never stored as properties).
 * A declared key may be a pattern: {@code <name>} is one dot-free segment, a trailing {@code *} any rest.
 */
public final class OptionsRegistry {
    private OptionsRegistry() {}

    /** One declared option. */
    public static final class Entry {
        public final String key;
        public final String type;
        public final String defaultValue; // null: no default
        public final boolean implemented;
        private final Pattern pattern;

        Entry(JsonNode node) {
            key = node.get("key").asText();
            type = node.get("type").asText();
            JsonNode d = node.get("default");
            defaultValue = d == null || d.isNull() ? null : d.asText();
            implemented = node.get("implemented").asBoolean();
            String regex = Pattern.quote(key).replaceAll("<[^>]*>", "\\\\E[^.]+\\\\Q");
            if (regex.endsWith("*\\E")) {
                regex = regex.substring(0, regex.length() - 3) + "\\E.+";
            }
            pattern = Pattern.compile(regex);
        }

        public boolean matches(String candidate) {
            return pattern.matcher(candidate).matches();
        }
    }

    private static final List<Entry> TABLE = new ArrayList<>();
    private static final List<Entry> CONNECTOR = new ArrayList<>();

    static {
        try (InputStream in = OptionsRegistry.class.getResourceAsStream("options-registry.json")) {
            if (in == null) {
                throw new IllegalStateException("options-registry.json is missing from the connector jar");
            }
            JsonNode root = new ObjectMapper().readTree(in);
            root.get("table_options").forEach(n -> TABLE.add(new Entry(n)));
            root.get("connector_options").forEach(n -> CONNECTOR.add(new Entry(n)));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read options-registry.json", e);
        }
    }

    public static List<Entry> tableOptions() {
        return Collections.unmodifiableList(TABLE);
    }

    public static List<Entry> connectorOptions() {
        return Collections.unmodifiableList(CONNECTOR);
    }

    /** The declaration of a key in either registry, or null. */
    public static Entry find(String key) {
        for (List<Entry> entries : List.of(TABLE, CONNECTOR)) {
            for (Entry e : entries) {
                if (e.matches(key)) {
                    return e;
                }
            }
        }
        return null;
    }

    /**
     * Whether a {@code WITH} key is a table property: any {@code table.*} key (the coordinator refuses unknown or
     * unsupported ones by name) and the other table options the registry declares ({@code fields.<column>.agg});
     * {@code bucket.num} / {@code bucket.key} are the descriptor's own fields and are not properties.
     */
    public static boolean isTableProperty(String key) {
        if (key.startsWith("table.")) {
            return true;
        }
        if (key.equals("bucket.num") || key.equals("bucket.key")) {
            return false;
        }
        for (Entry e : TABLE) {
            if (e.matches(key)) {
                return true;
            }
        }
        return false;
    }
}
