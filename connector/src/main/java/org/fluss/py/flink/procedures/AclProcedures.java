package org.fluss.py.flink.procedures;

import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.ProcedureHint;
import org.apache.flink.table.procedure.ProcedureContext;
import org.apache.flink.table.procedures.Procedure;
import org.fluss.py.rpc.AclFilterPb;
import org.fluss.py.rpc.AclPb;
import org.fluss.py.rpc.AdminServiceGrpc;
import org.fluss.py.rpc.CreateAclsRequest;
import org.fluss.py.rpc.DropAclsRequest;
import org.fluss.py.rpc.ListAclsRequest;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * Fluss's ACL procedures of a catalog ({@code CALL cat.sys.add_acl / list_acl / drop_acl}), with Fluss's arguments
 * ({@code resource, permission, principal, operation, host}; by name or by position) and results (one string per
 * ACL: {@code resource="cluster.db";permission="ALLOW";principal="User:alice";operation="READ";host="*"}).
 * Resources are written {@code cluster}, {@code cluster.<db>}, {@code cluster.<db>.<table>} (the {@code cluster.}
 * prefix may be left out); {@code ANY} matches everything in list_acl and drop_acl. The server checks every value
 * and the caller's permission (ALL on the resource), so a bad value or a refusal comes back with the server's
 * message (INVALID_CONFIG_EXCEPTION / AUTHORIZATION_EXCEPTION). Same wire calls as the Python admin API.
 */
public final class AclProcedures {
    public static final String SYSTEM_DATABASE = "sys";
    static final String CLUSTER_NAME = "fluss-cluster";

    /** Runs one coordinator call as the catalog does (failing over, errors as CatalogException). */
    public interface AdminCaller {
        <R extends com.google.protobuf.Message> R call(Function<AdminServiceGrpc.AdminServiceBlockingStub, R> rpc,
                                                       String what);
    }

    private AclProcedures() {
    }

    /** The procedures by name. */
    public static Map<String, Procedure> all(AdminCaller admin) {
        return Map.of("add_acl", new AddAcl(admin), "list_acl", new ListAcl(admin), "drop_acl", new DropAcl(admin));
    }

    /** {@code cluster[.db[.table]]} (or {@code ANY}) as the wire's resource type and name. */
    static String[] resource(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("A resource is required (cluster, cluster.<db> or cluster.<db>.<table>)");
        }
        String t = text.trim();
        if (t.equalsIgnoreCase("ANY")) {
            return new String[] {"ANY", ""};
        }
        String[] parts = t.split("\\.", -1);
        int start = parts[0].trim().equalsIgnoreCase("cluster") ? 1 : 0;
        int n = parts.length - start;
        for (int i = start; i < parts.length; i++) {
            if (parts[i].isBlank()) {
                n = 3; // reported below
            }
        }
        if (n == 0) {
            return new String[] {"CLUSTER", CLUSTER_NAME};
        }
        if (n == 1) {
            return new String[] {"DATABASE", parts[start].trim()};
        }
        if (n == 2) {
            return new String[] {"TABLE", parts[start].trim() + "." + parts[start + 1].trim()};
        }
        throw new IllegalArgumentException("Invalid resource '" + text
                + "' (expected cluster, cluster.<db> or cluster.<db>.<table>)");
    }

    private static String any(String value) {
        return value == null || value.isBlank() ? "ANY" : value.trim();
    }

    static String format(AclPb acl) {
        String resource = acl.getResourceType().equals("CLUSTER") ? "cluster" : "cluster." + acl.getResourceName();
        return String.format(Locale.ROOT, "resource=\"%s\";permission=\"%s\";principal=\"%s\";operation=\"%s\";host=\"%s\"",
                resource, acl.getPermission(), acl.getPrincipal(), acl.getOperation(), acl.getHost());
    }

    static AclFilterPb filter(String resource, String permission, String principal, String operation, String host) {
        String[] r = resource(any(resource));
        String p = any(principal);
        return AclFilterPb.newBuilder().setResourceType(r[0]).setResourceName(r[1])
                .setPermission(any(permission).toUpperCase(Locale.ROOT))
                .setPrincipal(p.equalsIgnoreCase("ANY") ? "" : p)
                .setOperation(any(operation).toUpperCase(Locale.ROOT))
                .setHost(any(host).equalsIgnoreCase("ANY") ? "" : host.trim()).build();
    }

    private static String[] formatted(List<AclPb> acls) {
        return acls.stream().map(AclProcedures::format).sorted().toArray(String[]::new);
    }

    /** {@code CALL sys.add_acl(resource, permission, principal, operation[, host])}. */
    public static final class AddAcl implements Procedure {
        private final AdminCaller admin;

        AddAcl(AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(argument = {
                @ArgumentHint(name = "resource", type = @DataTypeHint("STRING")),
                @ArgumentHint(name = "permission", type = @DataTypeHint("STRING")),
                @ArgumentHint(name = "principal", type = @DataTypeHint("STRING")),
                @ArgumentHint(name = "operation", type = @DataTypeHint("STRING")),
                @ArgumentHint(name = "host", type = @DataTypeHint("STRING"), isOptional = true)})
        public String[] call(ProcedureContext context, String resource, String permission, String principal,
                             String operation, String host) {
            String[] r = resource(resource);
            if (r[0].equals("ANY")) {
                throw new IllegalArgumentException("add_acl needs a concrete resource (ANY is for list_acl/drop_acl)");
            }
            AclPb acl = AclPb.newBuilder().setResourceType(r[0]).setResourceName(r[1])
                    .setPermission(permission == null ? "" : permission.trim().toUpperCase(Locale.ROOT))
                    .setPrincipal(principal == null ? "" : principal.trim())
                    .setOperation(operation == null ? "" : operation.trim().toUpperCase(Locale.ROOT))
                    .setHost(host == null || host.isBlank() ? "*" : host.trim()).build();
            admin.call(a -> a.createAcls(CreateAclsRequest.newBuilder().addAcls(acl).build()), "CreateAcls");
            return new String[] {format(acl)};
        }
    }

    /** {@code CALL sys.list_acl(resource[, permission, principal, operation, host])}: the matching ACLs. */
    public static final class ListAcl implements Procedure {
        private final AdminCaller admin;

        ListAcl(AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(argument = {
                @ArgumentHint(name = "resource", type = @DataTypeHint("STRING")),
                @ArgumentHint(name = "permission", type = @DataTypeHint("STRING"), isOptional = true),
                @ArgumentHint(name = "principal", type = @DataTypeHint("STRING"), isOptional = true),
                @ArgumentHint(name = "operation", type = @DataTypeHint("STRING"), isOptional = true),
                @ArgumentHint(name = "host", type = @DataTypeHint("STRING"), isOptional = true)})
        public String[] call(ProcedureContext context, String resource, String permission, String principal,
                             String operation, String host) {
            AclFilterPb f = filter(resource, permission, principal, operation, host);
            return formatted(admin.call(a -> a.listAcls(ListAclsRequest.newBuilder().setFilter(f).build()),
                    "ListAcls").getAclsList());
        }
    }

    /** {@code CALL sys.drop_acl(resource, permission, principal, operation[, host])}: the ACLs removed. */
    public static final class DropAcl implements Procedure {
        private final AdminCaller admin;

        DropAcl(AdminCaller admin) {
            this.admin = admin;
        }

        @ProcedureHint(argument = {
                @ArgumentHint(name = "resource", type = @DataTypeHint("STRING")),
                @ArgumentHint(name = "permission", type = @DataTypeHint("STRING"), isOptional = true),
                @ArgumentHint(name = "principal", type = @DataTypeHint("STRING"), isOptional = true),
                @ArgumentHint(name = "operation", type = @DataTypeHint("STRING"), isOptional = true),
                @ArgumentHint(name = "host", type = @DataTypeHint("STRING"), isOptional = true)})
        public String[] call(ProcedureContext context, String resource, String permission, String principal,
                             String operation, String host) {
            AclFilterPb f = filter(resource, permission, principal, operation, host);
            return formatted(admin.call(a -> a.dropAcls(DropAclsRequest.newBuilder().addFilters(f).build()),
                    "DropAcls").getDroppedList());
        }
    }
}
