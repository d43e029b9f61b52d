package org.fluss.py.flink.procedures;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.ProcedureHint;
import org.apache.flink.table.procedure.ProcedureContext;
import org.apache.flink.table.procedures.Procedure;
import org.apache.flink.types.Row;
import org.fluss.py.rpc.AlterClusterConfigsRequest;
import org.fluss.py.rpc.AlterConfigPb;
import org.fluss.py.rpc.ConfigEntryPb;
import org.fluss.py.rpc.DescribeClusterConfigsRequest;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Fluss's cluster configuration procedures ({@code CALL cat.sys.get_cluster_configs / set_cluster_configs /
 * reset_cluster_configs}) with Fluss's arguments: {@code config_keys} (any number of keys; none: every option) and
 * {@code config_pairs} (key, value, key, value, ...), given by position: Flink's SQL validator refuses named
 * arguments ({@code config_keys => ...}) of a procedure with a variable number of them. get_cluster_configs returns rows {@code (config_key,
 * config_value, config_source)}; set and reset return one line per key changed. The coordinator checks every
 * change (unknown key, key that needs a restart, bad value: the server's message naming the key, nothing stored)
 * and the caller's permission (ALTER / DESCRIBE on the cluster). Same wire calls as the Python admin's
 * {@code alter_cluster_configs} / {@code describe_cluster_configs}.
 */
public final class ClusterConfigProcedures {
    static final int SET = 0;
    static final int DELETE = 1;

    private ClusterConfigProcedures() {
    }

    /** The procedures by name. */
    public static Map<String, Procedure> all(AclProcedures.AdminCaller admin) {
        return Map.of("get_cluster_configs", new GetClusterConfigs(admin),
                "set_cluster_configs", new SetClusterConfigs(admin),
                "reset_cluster_configs", new ResetClusterConfigs(admin));
    }

    /** {@code key1, value1, key2, value2, ...} as SET changes; an odd count or a blank key is refused. */
    static List<AlterConfigPb> setChanges(String[] pairs) {
        if (pairs == null || pairs.length == 0) {
            throw new IllegalArgumentException("config_pairs is required: 'key1', 'value1' [, 'key2', 'value2' ...]");
        }
        if (pairs.length % 2 != 0) {
            throw new IllegalArgumentException("config_pairs must be key-value pairs (an even number of arguments), "
                    + "got " + pairs.length);
        }
        List<AlterConfigPb> out = new ArrayList<>();
        for (int i = 0; i < pairs.length; i += 2) {
            String key = key(pairs[i]);
            if (pairs[i + 1] == null) {
                throw new IllegalArgumentException("The value of '" + key + "' is null");
            }
            out.add(AlterConfigPb.newBuilder().setKey(key).setValue(pairs[i + 1].trim()).setOpType(SET).build());
        }
        return out;
    }

    /** The keys as DELETE changes (back to the servers' own value). */
    static List<AlterConfigPb> resetChanges(String[] keys) {
        if (keys == null || keys.length == 0) {
            throw new IllegalArgumentException("config_keys is required: 'key1' [, 'key2', ...]");
        }
        List<AlterConfigPb> out = new ArrayList<>();
        for (String k : keys) {
            out.add(AlterConfigPb.newBuilder().setKey(key(k)).setOpType(DELETE).build());
        }
        return out;
    }

    private static String key(String key) {
        if (key == null || key.isBlank()) {
            throw new IllegalArgumentException("A configuration key is empty");
        }
        return key.trim();
    }

    /** The entries to show: every one when no key is given, else the given keys in order (null value if unset). */
    static List<Row> select(List<ConfigEntryPb> entries, String[] keys) {
        List<Row> out = new ArrayList<>();
        if (keys == null || keys.length == 0) {
            for (ConfigEntryPb e : entries) {
                out.add(Row.of(e.getKey(), e.hasValue() ? e.getValue() : null, e.getConfigSource()));
            }
            return out;
        }
        Set<String> wanted = new LinkedHashSet<>();
        for (String k : keys) {
            wanted.add(key(k));
        }
        for (String k : wanted) {
            ConfigEntryPb found = entries.stream().filter(e -> e.getKey().equals(k)).findFirst().orElse(null);
            out.add(found == null ? Row.of(k, null, null)
                    : Row.of(k, found.hasValue() ? found.getValue() : null, found.getConfigSource()));
        }
        return out;
    }

    /** {@code CALL sys.get_cluster_configs(['k1', 'k2', ...])}: no key, every option. */
    public static final class GetClusterConfigs implements Procedure {
        private final AclProcedures.AdminCaller admin;

        GetClusterConfigs(AclProcedures.AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(input = @DataTypeHint("STRING"), isVarArgs = true,
                output = @DataTypeHint("ROW<config_key STRING, config_value STRING, config_source STRING>"))
        public Row[] call(ProcedureContext context, String... configKeys) {
            List<ConfigEntryPb> entries = admin.call(
                    a -> a.describeClusterConfigs(DescribeClusterConfigsRequest.getDefaultInstance()),
                    "DescribeClusterConfigs").getConfigsList();
            String[] keys = configKeys == null ? null
                    : java.util.Arrays.stream(configKeys).filter(k -> k != null).toArray(String[]::new);
            return select(entries, keys).toArray(new Row[0]);
        }
    }

    /** {@code CALL sys.set_cluster_configs('k1', 'v1' [, 'k2', 'v2' ...])}. */
    public static final class SetClusterConfigs implements Procedure {
        private final AclProcedures.AdminCaller admin;

        SetClusterConfigs(AclProcedures.AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(input = @DataTypeHint("STRING"), isVarArgs = true)
        public String[] call(ProcedureContext context, String... configPairs) {
            List<AlterConfigPb> changes = setChanges(configPairs);
            admin.call(a -> a.alterClusterConfigs(AlterClusterConfigsRequest.newBuilder().addAllConfigs(changes)
                    .build()), "AlterClusterConfigs");
            return changes.stream().map(c -> "Set '" + c.getKey() + "' to '" + c.getValue() + "'")
                    .toArray(String[]::new);
        }
    }

    /** {@code CALL sys.reset_cluster_configs('k1' [, 'k2', ...])}. */
    public static final class ResetClusterConfigs implements Procedure {
        private final AclProcedures.AdminCaller admin;

        ResetClusterConfigs(AclProcedures.AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(input = @DataTypeHint("STRING"), isVarArgs = true)
        public String[] call(ProcedureContext context, String... configKeys) {
            List<AlterConfigPb> changes = resetChanges(configKeys);
            admin.call(a -> a.alterClusterConfigs(AlterClusterConfigsRequest.newBuilder().addAllConfigs(changes)
                    .build()), "AlterClusterConfigs");
            return changes.stream().map(c -> "Reset '" + c.getKey() + "'").toArray(String[]::new);
        }
    }
}
