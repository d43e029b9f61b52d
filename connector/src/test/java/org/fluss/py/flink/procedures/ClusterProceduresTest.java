package org.fluss.py.flink.procedures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.fluss.py.rpc.ListRebalanceProgressResponse;
import org.fluss.py.rpc.RebalanceBucketPb;
import org.fluss.py.rpc.TablePathPb;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;

/** Fluss's argument forms of the rebalance procedures, their result rows, and the one registry of sys procedures. */
class ClusterProceduresTest {
    @Test
    void argumentsAreParsedAsFlussWritesThem() {
        assertEquals(List.of(0, 1, 2), ClusterProcedures.serverIds(" 0,1, 2 "));
        assertEquals(List.of(2, 0, 1), ClusterProcedures.goals("rack_aware, REPLICA_DISTRIBUTION,LEADER_DISTRIBUTION"));
        assertEquals(0, ClusterProcedures.named("server tag", ClusterProcedures.TAGS, "PERMANENT_OFFLINE"));
        assertEquals(1, ClusterProcedures.named("server tag", ClusterProcedures.TAGS, "temporary_offline"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ClusterProcedures.goals("REPLICA_DISTRIBUTION,FASTEST"));
        assertTrue(e.getMessage().contains("'FASTEST'") && e.getMessage().contains("RACK_AWARE"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ClusterProcedures.serverIds("0,x"));
        assertTrue(e.getMessage().contains("'x'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ClusterProcedures.serverIds(" "));
        assertThrows(IllegalArgumentException.class, () -> ClusterProcedures.goals(null));
        e = assertThrows(IllegalArgumentException.class,
                () -> ClusterProcedures.named("server tag", ClusterProcedures.TAGS, "RETIRED"));
        assertTrue(e.getMessage().contains("PERMANENT_OFFLINE, TEMPORARY_OFFLINE"), e.getMessage());
    }

    @Test
    void listRebalanceRowsAreIdStatusProgressThenBuckets() {
        assertArrayEquals(new String[0], ClusterProcedures.progressRows(ListRebalanceProgressResponse.newBuilder()
                .build()));
        ListRebalanceProgressResponse r = ListRebalanceProgressResponse.newBuilder().setRebalanceId("rebalance-1")
                .setRebalanceStatus(1).setProgress(0.5)
                .addBuckets(RebalanceBucketPb.newBuilder()
                        .setTablePath(TablePathPb.newBuilder().setDatabaseName("db").setTableName("t"))
                        .setTableId(7).setPartitionId(-1).setBucketId(2).setOriginalLeader(0).setNewLeader(3)
                        .addAllOriginalReplicas(List.of(0, 1)).addAllNewReplicas(List.of(3, 1)).setStatus(3))
                .build();
        assertArrayEquals(new String[] {"rebalance-1", "REBALANCING", "50.00%",
                "db.t bucket 2: [0, 1] (leader 0) -> [3, 1] (leader 3) COMPLETED"}, ClusterProcedures.progressRows(r));
    }

    @Test
    void theRegistryHoldsEveryFamily() {
        AclProcedures.AdminCaller none = new AclProcedures.AdminCaller() {
            @Override
            public <R extends com.google.protobuf.Message> R call(
                    java.util.function.Function<org.fluss.py.rpc.AdminServiceGrpc.AdminServiceBlockingStub, R> rpc,
                    String what) {
                throw new AssertionError("no call expected");
            }
        };
        assertTrue(SystemProcedures.all(none).keySet().containsAll(Set.of("add_acl", "list_acl", "drop_acl",
                "add_server_tag", "remove_server_tag", "rebalance", "list_rebalance", "cancel_rebalance")));
    }
}
