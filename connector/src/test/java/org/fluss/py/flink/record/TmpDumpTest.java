package org.fluss.py.flink.record;

import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.types.FlussTypes;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

class TmpDumpTest {
    @Test
    void dump() throws Exception {
        RowType t = new RowType(List.of(new RowType.RowField("id", FlussTypes.toFlink("INT NOT NULL")),
                new RowType.RowField("roles", FlussTypes.toFlink("ARRAY<STRING>")),
                new RowType.RowField("prefs", FlussTypes.toFlink("MAP<STRING, BOOLEAN>")),
                new RowType.RowField("home", FlussTypes.toFlink("ROW<city STRING, zip INT>"))));
        try (RootAllocator a = new RootAllocator(); ArrowBatchWriter w = new ArrowBatchWriter(t, a, 1, 3)) {
            java.util.Map<Object, Object> m1 = new java.util.LinkedHashMap<>();
            m1.put(StringData.fromString("mail"), true);
            java.util.Map<Object, Object> m2 = new java.util.LinkedHashMap<>();
            m2.put(StringData.fromString("mail"), false);
            m2.put(StringData.fromString("sms"), true);
            w.write(GenericRowData.of(1, new GenericArrayData(new Object[] {StringData.fromString("admin")}),
                    new org.apache.flink.table.data.GenericMapData(m1),
                    GenericRowData.of(StringData.fromString("Oslo"), 150)), (byte) 3);
            w.write(GenericRowData.of(2, new GenericArrayData(new Object[] {StringData.fromString("dev"),
                    StringData.fromString("ops")}), new org.apache.flink.table.data.GenericMapData(m2),
                    GenericRowData.of(StringData.fromString("Lima"), 15001)), (byte) 3);
            Files.write(Paths.get("/tmp/i14/jt/two.bin"), w.finish(1, -1L, -1));
            w.write(GenericRowData.of(2, new GenericArrayData(new Object[] {StringData.fromString("dev")}), null,
                    GenericRowData.of(StringData.fromString("Lima"), 15002)), (byte) 3);
            Files.write(Paths.get("/tmp/i14/jt/one.bin"), w.finish(1, -1L, -1));
        }
    }
}
