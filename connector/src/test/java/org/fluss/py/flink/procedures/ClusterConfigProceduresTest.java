package org.fluss.py.flink.procedures;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.types.Row;
import org.fluss.py.rpc.AlterConfigPb;
import org.fluss.py.rpc.ConfigEntryPb;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/** Arguments of Fluss's cluster configuration procedures as wire changes, and the rows get_cluster_configs shows. */
class ClusterConfigProceduresTest {
    private static final AclProcedures.AdminCaller NO_CALLS = new AclProcedures.AdminCaller() {
        @Override
        public <R extends com.google.protobuf.Message> R call(
                java.util.function.Function<org.fluss.py.rpc.AdminServiceGrpc.AdminServiceBlockingStub, R> rpc,
                String what) {
            throw new AssertionError("no call expected: " + what);
        }
    };

    @Test
    void configPairsBecomeSetChanges() {
        List<AlterConfigPb> changes = ClusterConfigProcedures.setChanges(
                new String[] {" kv.snapshot.interval ", " 1s", "datalake.format", "paimon"});
        assertEquals(2, changes.size());
        assertEquals("kv.snapshot.interval", changes.get(0).getKey());
        assertEquals("1s", changes.get(0).getValue());
        assertEquals(ClusterConfigProcedures.SET, changes.get(0).getOpType());
        assertEquals("datalake.format", changes.get(1).getKey());
        IllegalArgumentException odd = assertThrows(IllegalArgumentException.class,
                () -> ClusterConfigProcedures.setChanges(new String[] {"kv.snapshot.interval"}));
        assertTrue(odd.getMessage().contains("even"), odd.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ClusterConfigProcedures.setChanges(new String[0]));
        assertThrows(IllegalArgumentException.class,
                () -> ClusterConfigProcedures.setChanges(new String[] {" ", "1"}));
        assertThrows(IllegalArgumentException.class,
                () -> ClusterConfigProcedures.setChanges(new String[] {"kv.snapshot.interval", null}));
    }

    @Test
    void configKeysBecomeDeleteChanges() {
        List<AlterConfigPb> changes = ClusterConfigProcedures.resetChanges(new String[] {"kv.snapshot.interval"});
        assertEquals(1, changes.size());
        assertEquals(ClusterConfigProcedures.DELETE, changes.get(0).getOpType());
        assertFalse(changes.get(0).hasValue());
        assertThrows(IllegalArgumentException.class, () -> ClusterConfigProcedures.resetChanges(null));
    }

    @Test
    void getShowsEveryEntryOrTheKeysAskedFor() {
        List<ConfigEntryPb> entries = List.of(
                ConfigEntryPb.newBuilder().setKey("a.b").setValue("1").setConfigSource("DEFAULT_CONFIG").build(),
                ConfigEntryPb.newBuilder().setKey("c.d").setValue("x").setConfigSource("DYNAMIC_SERVER_CONFIG")
                        .build());
        assertEquals(2, ClusterConfigProcedures.select(entries, null).size());
        List<Row> rows = ClusterConfigProcedures.select(entries, new String[] {"c.d", "no.such"});
        assertEquals(Row.of("c.d", "x", "DYNAMIC_SERVER_CONFIG"), rows.get(0));
        assertEquals("no.such", rows.get(1).getField(0));
        assertNull(rows.get(1).getField(1));
    }

    @Test
    void systemProceduresHoldEveryFamily() {
        Set<String> names = new TreeSet<>(SystemProcedures.all(NO_CALLS).keySet());
        assertEquals(new TreeSet<>(Set.of("add_acl", "list_acl", "drop_acl", "get_cluster_configs",
                "set_cluster_configs", "reset_cluster_configs", "add_server_tag", "remove_server_tag", "rebalance",
                "list_rebalance", "cancel_rebalance")), names);
    }
}
