package org.fluss.py.flink.procedures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.fluss.py.rpc.AclFilterPb;
import org.fluss.py.rpc.AclPb;
import org.junit.jupiter.api.Test;

/** The procedures' resource names and result strings are Fluss's; the wire form is the Python admin API's. */
class AclProceduresTest {
    @Test
    void resourcesAreWrittenAsFlussWritesThem() {
        assertArrayEquals(new String[] {"CLUSTER", "fluss-cluster"}, AclProcedures.resource("cluster"));
        assertArrayEquals(new String[] {"CLUSTER", "fluss-cluster"}, AclProcedures.resource(" CLUSTER "));
        assertArrayEquals(new String[] {"DATABASE", "db1"}, AclProcedures.resource("cluster.db1"));
        assertArrayEquals(new String[] {"TABLE", "db1.t"}, AclProcedures.resource("cluster.db1.t"));
        assertArrayEquals(new String[] {"TABLE", "db1.t"}, AclProcedures.resource("db1.t"));
        assertArrayEquals(new String[] {"ANY", ""}, AclProcedures.resource("any"));
        for (String bad : new String[] {"cluster.a.b.c", "cluster..t", "", "db."}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> AclProcedures.resource(bad));
            assertEquals(true, e.getMessage().contains("cluster.<db>"), e.getMessage());
        }
    }

    @Test
    void resultsAndFiltersHaveFlussShape() {
        AclPb acl = AclPb.newBuilder().setResourceType("DATABASE").setResourceName("db1").setPermission("ALLOW")
                .setPrincipal("User:alice").setOperation("READ").setHost("*").build();
        assertEquals("resource=\"cluster.db1\";permission=\"ALLOW\";principal=\"User:alice\";operation=\"READ\";"
                + "host=\"*\"", AclProcedures.format(acl));
        AclFilterPb f = AclProcedures.filter("cluster", null, "ANY", "read", null);
        assertEquals("CLUSTER", f.getResourceType());
        assertEquals("", f.getPrincipal());
        assertEquals("READ", f.getOperation());
        assertEquals("ANY", f.getPermission());
        assertEquals("", f.getHost());
    }
}
