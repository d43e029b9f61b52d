package org.fluss.py.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.FallbackKey;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.util.TimeUtils;
import org.fluss.py.flink.catalog.FlussCatalogFactory;
import org.fluss.py.flink.table.FlussDynamicTableFactory;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The connector's option list against the Python registries ({@code options-registry.json}, generated from
 * {@code fluss/table_options.py}): every option this connector declares is declared there with the same type and
 * default, and every option the registry says the connector implements is one the connector accepts.
 */
class OptionsRegistryTest {

    private static final Map<String, Set<Class<?>>> TYPES = Map.of(
            "String", Set.of(String.class), "List", Set.of(String.class), "Integer", Set.of(Integer.class),
            "Long", Set.of(Long.class), "Boolean", Set.of(Boolean.class), "Duration", Set.of(Duration.class),
            "MemorySize", Set.of(MemorySize.class), "Enum", Set.of(String.class, Enum.class));

    private static List<ConfigOption<?>> declaredInFlussOptions() throws IllegalAccessException {
        List<ConfigOption<?>> out = new ArrayList<>();
        for (Field f : FlussOptions.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && ConfigOption.class.isAssignableFrom(f.getType())) {
                out.add((ConfigOption<?>) f.get(null));
            }
        }
        return out;
    }

    private static Set<ConfigOption<?>> acceptedByFactories() {
        Set<ConfigOption<?>> out = new HashSet<>();
        FlussDynamicTableFactory table = new FlussDynamicTableFactory();
        out.addAll(table.requiredOptions());
        out.addAll(table.optionalOptions());
        FlussCatalogFactory catalog = new FlussCatalogFactory();
        out.addAll(catalog.requiredOptions());
        out.addAll(catalog.optionalOptions());
        return out;
    }

    private static Class<?> clazz(ConfigOption<?> option) throws ReflectiveOperationException {
        Method m = ConfigOption.class.getDeclaredMethod("getClazz");
        m.setAccessible(true);
        return (Class<?>) m.invoke(option);
    }

    private static void assertSameDefault(OptionsRegistry.Entry entry, ConfigOption<?> option) {
        if (!option.hasDefaultValue()) {
            return; // the registry may document Fluss's default where the connector leaves the key unset
        }
        Object d = option.defaultValue();
        assertNotNull(entry.defaultValue, option.key() + ": the connector has a default, the registry none");
        if (d instanceof Duration) {
            assertEquals(TimeUtils.parseDuration(entry.defaultValue), d, option.key());
        } else if (d instanceof MemorySize) {
            assertEquals(MemorySize.parse(entry.defaultValue), d, option.key());
        } else if (d instanceof Enum) {
            assertTrue(((Enum<?>) d).name().equalsIgnoreCase(entry.defaultValue), option.key());
        } else {
            assertEquals(entry.defaultValue, String.valueOf(d), option.key());
        }
    }

    @Test
    void everyConnectorOptionIsDeclaredInTheRegistryWithItsTypeAndDefault() throws Exception {
        Set<ConfigOption<?>> all = new HashSet<>(declaredInFlussOptions());
        all.addAll(acceptedByFactories());
        for (ConfigOption<?> option : all) {
            OptionsRegistry.Entry entry = OptionsRegistry.find(option.key());
            assertNotNull(entry, "'" + option.key() + "' is not in fluss/table_options.py: declare it there and "
                    + "run `make options`");
            assertTrue(entry.implemented, option.key() + " is implemented here: mark it so in the registry");
            Class<?> c = clazz(option);
            assertTrue(TYPES.get(entry.type).stream().anyMatch(t -> t.isAssignableFrom(c)),
                    option.key() + ": registry type " + entry.type + ", connector type " + c.getSimpleName());
            assertSameDefault(entry, option);
            for (FallbackKey fallback : option.fallbackKeys()) {
                assertNotNull(OptionsRegistry.find(fallback.getKey()), "fallback key " + fallback.getKey());
            }
        }
    }

    @Test
    void everyOptionTheRegistrySaysTheConnectorImplementsIsAccepted() {
        Set<String> accepted = new HashSet<>();
        for (ConfigOption<?> option : acceptedByFactories()) {
            accepted.add(option.key());
            option.fallbackKeys().forEach(f -> accepted.add(f.getKey()));
        }
        for (OptionsRegistry.Entry entry : OptionsRegistry.connectorOptions()) {
            if (entry.implemented) {
                assertTrue(accepted.contains(entry.key), "the registry marks '" + entry.key + "' implemented, "
                        + "but neither factory accepts it");
            }
        }
    }

    @Test
    void tableOptionsBecomePropertiesAndClientOptionsDoNot() {
        assertTrue(OptionsRegistry.isTableProperty("table.log.ttl"));
        assertTrue(OptionsRegistry.isTableProperty("table.log.tll")); // the coordinator names the typo
        assertTrue(OptionsRegistry.isTableProperty("fields.total.agg"));
        assertTrue(OptionsRegistry.isTableProperty("fields.tags.listagg.delimiter"));
        assertFalse(OptionsRegistry.isTableProperty("fields.id.kind")); // a datagen option, not Fluss's
        assertFalse(OptionsRegistry.isTableProperty("scan.startup.mode"));
        assertFalse(OptionsRegistry.isTableProperty("client.writer.acks"));
        assertFalse(OptionsRegistry.isTableProperty("bucket.num"));
    }
}
