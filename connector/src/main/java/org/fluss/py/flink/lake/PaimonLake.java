package org.fluss.py.flink.lake;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.io.DataInputViewStreamWrapper;
import org.apache.paimon.io.DataOutputViewStreamWrapper;
import org.apache.paimon.options.Options;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeRoot;
import org.apache.paimon.types.RowType;
import org.fluss.py.flink.client.TablePath;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The Paimon side of Union Read, with Paimon's own Java reader: the lake table of a Fluss table ({@code db.t} in
 * the filesystem catalog of the table's {@code table.datalake.paimon.*} options), the splits of one snapshot
 * grouped by bucket (Fluss bucket {@code b} is Paimon bucket {@code b}: the tiering job writes with the bucket
 * given), and their serialized form for Flink splits. See {@code fluss/lake/paimon.py} for the mapping.
 */
public final class PaimonLake {
    /** The extra column of a primary-key lake table holding the row kind (not a Fluss column). */
    public static final String ROW_KIND_COLUMN = "__row_kind";

    /**
     * The system columns at the end of a lake table, as Fluss adds them (the Fluss bucket, log offset and commit
     * time of each row); {@code t$lake} exposes them, Union Read leaves them out.
     */
    public static final List<String> SYSTEM_COLUMNS = List.of("__bucket", "__offset", "__timestamp");

    /** A bucket of the lake table: the Fluss partition name (null when not partitioned) and the bucket. */
    public record LakeBucket(String partitionName, int bucket) {}

    private PaimonLake() {}

    /** The lake table of {@code path} in the catalog with these options. */
    public static Table table(Map<String, String> catalogOptions, TablePath path) {
        Options options = Options.fromMap(catalogOptions);
        options.setString("metastore", catalogOptions.getOrDefault("metastore", "filesystem"));
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
            return catalog.getTable(Identifier.create(path.database(), path.table()));
        } catch (Catalog.TableNotExistException e) {
            throw new IllegalStateException("Lake table " + path + " does not exist in the Paimon warehouse "
                    + catalogOptions.get("warehouse"), e);
        } catch (Exception e) {
            throw new IllegalStateException("Opening the lake table " + path + " failed: " + e, e);
        }
    }

    /** The table as of a snapshot (time travel: later tiering commits change nothing). */
    public static Table atSnapshot(Table table, long snapshotId) {
        return table.copy(Map.of("scan.snapshot-id", String.valueOf(snapshotId)));
    }

    /** The splits of the snapshot, serialized and grouped per bucket. */
    public static Map<LakeBucket, List<byte[]>> plan(Table table, long snapshotId) {
        Table at = atSnapshot(table, snapshotId);
        RowType partitionType = at.rowType().project(at.partitionKeys());
        Map<LakeBucket, List<byte[]>> out = new HashMap<>();
        for (Split s : at.newReadBuilder().newScan().plan().splits()) {
            DataSplit d = (DataSplit) s;
            String partition = at.partitionKeys().isEmpty() ? null : partitionName(d.partition(), partitionType);
            out.computeIfAbsent(new LakeBucket(partition, d.bucket()), k -> new ArrayList<>()).add(serialize(d));
        }
        return out;
    }

    /** The Fluss partition name of a Paimon partition: the values as strings joined by {@code $}. */
    static String partitionName(BinaryRow partition, RowType partitionType) {
        List<String> values = new ArrayList<>();
        for (int i = 0; i < partitionType.getFieldCount(); i++) {
            DataType type = partitionType.getTypeAt(i);
            Object v = InternalRow.createFieldGetter(type, i).getFieldOrNull(partition);
            if (v != null && type.getTypeRoot() == DataTypeRoot.DATE) {
                v = LocalDate.ofEpochDay((Integer) v);
            }
            values.add(String.valueOf(v));
        }
        return String.join("$", values);
    }

    /** The number of rows of these splits, or -1 when Paimon cannot tell without reading (merges pending). */
    public static long rowCount(List<byte[]> splits) {
        long n = 0;
        for (byte[] b : splits) {
            DataSplit d = deserialize(b);
            if (!d.mergedRowCountAvailable()) {
                return -1;
            }
            n += d.mergedRowCount();
        }
        return n;
    }

    public static byte[] serialize(DataSplit split) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try {
            split.serialize(new DataOutputViewStreamWrapper(bytes));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    public static DataSplit deserialize(byte[] bytes) {
        try {
            return DataSplit.deserialize(new DataInputViewStreamWrapper(new ByteArrayInputStream(bytes)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
