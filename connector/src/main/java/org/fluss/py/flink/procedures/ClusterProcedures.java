package org.fluss.py.flink.procedures;

import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.ProcedureHint;
import org.apache.flink.table.procedure.ProcedureContext;
import org.apache.flink.table.procedures.Procedure;
import org.fluss.py.rpc.AddServerTagRequest;
import org.fluss.py.rpc.CancelRebalanceRequest;
import org.fluss.py.rpc.ListRebalanceProgressRequest;
import org.fluss.py.rpc.ListRebalanceProgressResponse;
import org.fluss.py.rpc.RebalanceBucketPb;
import org.fluss.py.rpc.RebalanceRequest;
import org.fluss.py.rpc.RemoveServerTagRequest;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Fluss's rebalance procedures of a catalog, with Fluss's argument names and results:
 * {@code sys.add_server_tag(tabletServers, serverTag)} and {@code sys.remove_server_tag(tabletServers, serverTag)}
 * ({@code '0,1,2'}, {@code 'PERMANENT_OFFLINE'} / {@code 'TEMPORARY_OFFLINE'}; result {@code success}),
 * {@code sys.rebalance(priorityGoals)} ({@code 'RACK_AWARE,REPLICA_DISTRIBUTION,LEADER_DISTRIBUTION'}; result the
 * rebalance id), {@code sys.list_rebalance([rebalanceId])} (the id, the status, the progress as a percentage, then
 * one line per bucket; nothing when there is no such rebalance) and {@code sys.cancel_rebalance([rebalanceId])}
 * (result {@code success}). Names are checked here (naming the valid ones); the coordinator checks everything again
 * and the caller's permission (ALTER / DESCRIBE on the cluster).
 */
public final class ClusterProcedures {
    /** Fluss's goal types, by wire number. */
    static final List<String> GOALS = List.of("REPLICA_DISTRIBUTION", "LEADER_DISTRIBUTION", "RACK_AWARE");
    /** Fluss's server tags, by wire number. */
    static final List<String> TAGS = List.of("PERMANENT_OFFLINE", "TEMPORARY_OFFLINE");
    /** Fluss's rebalance statuses, by wire number. */
    static final List<String> STATUSES = List.of("NOT_STARTED", "REBALANCING", "FAILED", "COMPLETED", "CANCELED",
            "TIMEOUT");

    private ClusterProcedures() {
    }

    /** The procedures by name. */
    public static Map<String, Procedure> all(AclProcedures.AdminCaller admin) {
        return Map.of("add_server_tag", new AddServerTag(admin), "remove_server_tag", new RemoveServerTag(admin),
                "rebalance", new Rebalance(admin), "list_rebalance", new ListRebalance(admin),
                "cancel_rebalance", new CancelRebalance(admin));
    }

    /** {@code '0, 1,2'} as server ids. */
    static List<Integer> serverIds(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("tabletServers is required: server ids separated by commas (e.g. '0,1')");
        }
        List<Integer> ids = new ArrayList<>();
        for (String part : text.split(",", -1)) {
            try {
                ids.add(Integer.parseInt(part.trim()));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("Invalid tablet server id '" + part.trim() + "' in '" + text
                        + "' (expected ids separated by commas, e.g. '0,1')");
            }
        }
        return ids;
    }

    /** A name of {@code names} (any case) as its wire number. */
    static int named(String what, List<String> names, String value) {
        int i = value == null ? -1 : names.indexOf(value.trim().toUpperCase(Locale.ROOT));
        if (i < 0) {
            throw new IllegalArgumentException("Unknown " + what + " '" + value + "' (expected one of "
                    + String.join(", ", names) + ")");
        }
        return i;
    }

    static List<Integer> goals(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("priorityGoals is required, e.g. 'RACK_AWARE,REPLICA_DISTRIBUTION'");
        }
        List<Integer> out = new ArrayList<>();
        for (String part : text.split(",", -1)) {
            out.add(named("rebalance goal", GOALS, part));
        }
        return out;
    }

    private static String status(int code) {
        return code >= 0 && code < STATUSES.size() ? STATUSES.get(code) : "UNKNOWN(" + code + ")";
    }

    /** The rows of {@code list_rebalance}: id, status, progress, then one per bucket. */
    static String[] progressRows(ListRebalanceProgressResponse r) {
        if (r.getRebalanceId().isEmpty()) {
            return new String[0];
        }
        List<String> rows = new ArrayList<>();
        rows.add(r.getRebalanceId());
        rows.add(status(r.getRebalanceStatus()));
        rows.add(String.format(Locale.ROOT, "%.2f%%", r.getProgress() * 100));
        for (RebalanceBucketPb b : r.getBucketsList()) {
            String table = b.hasTablePath()
                    ? b.getTablePath().getDatabaseName() + "." + b.getTablePath().getTableName()
                    : "table " + b.getTableId();
            String partition = b.getPartitionName().isEmpty() ? "" : " partition " + b.getPartitionName();
            rows.add(String.format(Locale.ROOT, "%s%s bucket %d: %s (leader %d) -> %s (leader %d) %s", table,
                    partition, b.getBucketId(), b.getOriginalReplicasList(), b.getOriginalLeader(),
                    b.getNewReplicasList(), b.getNewLeader(), status(b.getStatus())));
        }
        return rows.toArray(String[]::new);
    }

    /** {@code CALL sys.add_server_tag(tabletServers, serverTag)}. */
    public static final class AddServerTag implements Procedure {
        private final AclProcedures.AdminCaller admin;

        AddServerTag(AclProcedures.AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(argument = {
                @ArgumentHint(name = "tabletServers", type = @DataTypeHint("STRING")),
                @ArgumentHint(name = "serverTag", type = @DataTypeHint("STRING"))})
        public String[] call(ProcedureContext context, String tabletServers, String serverTag) {
            AddServerTagRequest req = AddServerTagRequest.newBuilder().addAllServerIds(serverIds(tabletServers))
                    .setServerTag(named("server tag", TAGS, serverTag)).build();
            admin.call(a -> a.addServerTag(req), "AddServerTag");
            return new String[] {"success"};
        }
    }

    /** {@code CALL sys.remove_server_tag(tabletServers, serverTag)}. */
    public static final class RemoveServerTag implements Procedure {
        private final AclProcedures.AdminCaller admin;

        RemoveServerTag(AclProcedures.AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(argument = {
                @ArgumentHint(name = "tabletServers", type = @DataTypeHint("STRING")),
                @ArgumentHint(name = "serverTag", type = @DataTypeHint("STRING"))})
        public String[] call(ProcedureContext context, String tabletServers, String serverTag) {
            RemoveServerTagRequest req = RemoveServerTagRequest.newBuilder().addAllServerIds(serverIds(tabletServers))
                    .setServerTag(named("server tag", TAGS, serverTag)).build();
            admin.call(a -> a.removeServerTag(req), "RemoveServerTag");
            return new String[] {"success"};
        }
    }

    /** {@code CALL sys.rebalance(priorityGoals)}: the rebalance id. */
    public static final class Rebalance implements Procedure {
        private final AclProcedures.AdminCaller admin;

        Rebalance(AclProcedures.AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(argument = {@ArgumentHint(name = "priorityGoals", type = @DataTypeHint("STRING"))})
        public String[] call(ProcedureContext context, String priorityGoals) {
            RebalanceRequest req = RebalanceRequest.newBuilder().addAllGoals(goals(priorityGoals)).build();
            return new String[] {admin.call(a -> a.rebalance(req), "Rebalance").getRebalanceId()};
        }
    }

    /** {@code CALL sys.list_rebalance([rebalanceId])}. */
    public static final class ListRebalance implements Procedure {
        private final AclProcedures.AdminCaller admin;

        ListRebalance(AclProcedures.AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(argument = {
                @ArgumentHint(name = "rebalanceId", type = @DataTypeHint("STRING"), isOptional = true)})
        public String[] call(ProcedureContext context, String rebalanceId) {
            ListRebalanceProgressRequest req = ListRebalanceProgressRequest.newBuilder()
                    .setRebalanceId(rebalanceId == null ? "" : rebalanceId.trim()).build();
            return progressRows(admin.call(a -> a.listRebalanceProgress(req), "ListRebalanceProgress"));
        }
    }

    /** {@code CALL sys.cancel_rebalance([rebalanceId])}. */
    public static final class CancelRebalance implements Procedure {
        private final AclProcedures.AdminCaller admin;

        CancelRebalance(AclProcedures.AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(argument = {
                @ArgumentHint(name = "rebalanceId", type = @DataTypeHint("STRING"), isOptional = true)})
        public String[] call(ProcedureContext context, String rebalanceId) {
            CancelRebalanceRequest req = CancelRebalanceRequest.newBuilder()
                    .setRebalanceId(rebalanceId == null ? "" : rebalanceId.trim()).build();
            admin.call(a -> a.cancelRebalance(req), "CancelRebalance");
            return new String[] {"success"};
        }
    }
}
