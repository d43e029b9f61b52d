package org.fluss.py.flink.lake;

import org.fluss.py.rpc.TableInfoPb;

import java.util.HashMap;
import java.util.Map;

/**
 * What a table's properties say about its lake (no Paimon classes here): {@code table.datalake.enabled} and the
 * Paimon catalog options the coordinator records as {@code table.datalake.paimon.*} when it creates the lake
 * table (the Python side's {@code fluss.lake.paimon.lake_of_table} reads the same keys).
 */
public final class LakeConfig {
    public static final String ENABLED = "table.datalake.enabled";
    public static final String PAIMON_PREFIX = "table.datalake.paimon.";

    private LakeConfig() {}

    public static boolean isLakeEnabled(Map<String, String> tableProperties) {
        return "true".equalsIgnoreCase(tableProperties.getOrDefault(ENABLED, "false").trim());
    }

    public static boolean isLakeEnabled(TableInfoPb info) {
        return isLakeEnabled(info.getDescriptorPb().getPropertiesMap());
    }

    /** The Paimon catalog options of a lake table (prefix stripped); {@code warehouse} is required. */
    public static Map<String, String> catalogOptions(TableInfoPb info) {
        Map<String, String> out = new HashMap<>();
        for (Map.Entry<String, String> e : info.getDescriptorPb().getPropertiesMap().entrySet()) {
            if (e.getKey().startsWith(PAIMON_PREFIX)) {
                out.put(e.getKey().substring(PAIMON_PREFIX.length()), e.getValue());
            }
        }
        if (!out.containsKey("warehouse")) {
            throw new IllegalStateException("Lake-enabled table records no Paimon warehouse (" + PAIMON_PREFIX
                    + "warehouse): was it created on a cluster with 'datalake.format' = 'paimon'?");
        }
        return out;
    }

    /** The error for a lake read without Paimon's classes (the jars of connector/target/lib are missing). */
    public static IllegalStateException paimonMissing(Throwable cause) {
        return new IllegalStateException("Reading the lake of a Fluss table needs Paimon's Java reader: add the jars "
                + "of the connector's lib/ directory (connector/target/lib: paimon-bundle and the Hadoop uber jar) "
                + "to the job, as fluss.flink.add_connector_jars does", cause);
    }
}
