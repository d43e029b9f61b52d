package org.fluss.py.flink.source;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** How log records of a primary-key table become Flink rows, and the $changelog layout. */
class ReadSpecTest {
    private static final RowType TABLE = RowType.of(new IntType[] {new IntType(false)}, new String[] {"id"});
    private static final RowType TWO = new RowType(List.of(new RowType.RowField("id", new IntType(false)),
            new RowType.RowField("v", new VarCharType(VarCharType.MAX_LENGTH))));

    @Test
    void changeTypesBecomeRowKinds() {
        ReadSpec spec = new ReadSpec(TABLE, null, true, false, false, null);
        byte[] types = {1, 2, 3, 4};
        RowKind[] kinds = {RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE};
        for (int i = 0; i < types.length; i++) {
            assertEquals(kinds[i], spec.fromLog(GenericRowData.of(i), types[i], i, 0L).getRowKind());
        }
    }

    @Test
    void changelogRowsArePrefixedWithMetadataAndProjected() {
        ReadSpec spec = new ReadSpec(TWO, null, true, false, true, new int[] {4, 0, 1});
        assertEquals(List.of("v", "_change_type", "_log_offset"), spec.producedType().getFieldNames());
        RowData out = spec.fromLog(GenericRowData.of(7, StringData.fromString("x")), (byte) 2, 12L, 1000L);
        assertEquals(RowKind.INSERT, out.getRowKind());
        assertEquals("x", out.getString(0).toString());
        assertEquals("-U", out.getString(1).toString());
        assertEquals(12L, out.getLong(2));
    }

    @Test
    void mergingLakeAndLogReadsWholeRowsAndKeysThemByValue() {
        ReadSpec spec = new ReadSpec(TWO, new int[] {1}, false, true, false, null)
                .withLake(ReadSpec.LakeMode.UNION, true, new int[] {1, 0});
        assertEquals(null, spec.fetchProjection()); // the log tail is merged by key: every column
        assertEquals(List.of("id", "v"), spec.fetchType().getFieldNames());
        assertEquals(List.of("v"), spec.producedType().getFieldNames());
        // keys compare by value, whatever StringData implementation holds the string
        assertEquals(spec.key(GenericRowData.of(7, StringData.fromString("x"))),
                spec.key(GenericRowData.of(7, StringData.fromBytes("x".getBytes(java.nio.charset.StandardCharsets.UTF_8)))));
        assertEquals(List.of("x", 7), spec.key(GenericRowData.of(7, StringData.fromString("x"))));
        ReadSpec plain = new ReadSpec(TWO, new int[] {1}, false, false, false, null).withLimit(5);
        assertEquals(5L, plain.limit);
        assertEquals(1, plain.fetchProjection().length);
    }
}
