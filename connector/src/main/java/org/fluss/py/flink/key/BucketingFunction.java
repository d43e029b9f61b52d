package org.fluss.py.flink.key;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalType;

import java.io.Serializable;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The bucket function of a table, bound to the bucket-key columns of the rows it routes (the Java side of
 * {@code fluss/key/bucket_function.py}). The coordinator records the function in the table property
 * {@value #TABLE_PROPERTY} when the table is created: {@code paimon} on a cluster whose lake format is Paimon
 * ({@link PaimonKeyEncoder}, so Fluss and Paimon buckets are the same), {@code default} otherwise
 * ({@link KeyEncoder} + {@link BucketFunction}); tables without the property predate it and use {@code default}.
 */
public interface BucketingFunction extends Serializable {
    String TABLE_PROPERTY = "table.bucket.function";
    String DEFAULT = "default";
    String PAIMON = "paimon";

    /** The bucket of a row (read at the bucket-key positions given at creation). */
    int bucket(RowData row, int numBuckets);

    /** The function recorded in a table's properties, over the given bucket-key columns of a row type. */
    static BucketingFunction of(Map<String, String> tableProperties, List<LogicalType> rowType, int[] keyPositions) {
        String name = tableProperties.getOrDefault(TABLE_PROPERTY, DEFAULT).trim().toLowerCase(Locale.ROOT);
        switch (name) {
            case DEFAULT: {
                KeyEncoder encoder = new KeyEncoder(rowType, keyPositions);
                return (row, n) -> BucketFunction.bucket(encoder.encode(row), n);
            }
            case PAIMON: {
                PaimonKeyEncoder encoder = new PaimonKeyEncoder(rowType, keyPositions);
                return (row, n) -> PaimonKeyEncoder.bucket(encoder.encode(row), n);
            }
            default:
                throw new IllegalArgumentException("Unknown bucket function '" + name + "' in table property '"
                        + TABLE_PROPERTY + "' (known: default, paimon)");
        }
    }
}
