package org.fluss.py.flink.procedures;

import org.apache.flink.table.procedures.Procedure;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Every procedure of a catalog's {@code sys} database ({@code CALL cat.sys.<name>(...)}): the maps of the
 * procedure families merged (ACLs, cluster configuration, rebalance and server tags, ...). Names are unique across families.
 */
public final class SystemProcedures {
    public static final String SYSTEM_DATABASE = AclProcedures.SYSTEM_DATABASE;

    private SystemProcedures() {
    }

    /** The procedures by name. */
    public static Map<String, Procedure> all(AclProcedures.AdminCaller admin) {
        Map<String, Procedure> out = new HashMap<>();
        for (Map<String, Procedure> family : List.of(
                AclProcedures.all(admin),
                ClusterConfigProcedures.all(admin),
                ClusterProcedures.all(admin))) {
            for (Map.Entry<String, Procedure> e : family.entrySet()) {
                if (out.putIfAbsent(e.getKey(), e.getValue()) != null) {
                    throw new IllegalStateException("Two system procedures are named " + e.getKey());
                }
            }
        }
        return out;
    }
}
