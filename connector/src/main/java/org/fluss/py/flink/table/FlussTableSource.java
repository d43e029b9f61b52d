package org.fluss.py.flink.table;

import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.connector.source.abilities.SupportsProjectionPushDown;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.source.FlussSource;
import org.fluss.py.flink.source.StartupMode;

import java.util.ArrayList;
import java.util.List;

/** Scan of a Fluss log table (insert-only changelog), with top-level projection pushed to the tablet servers. */
public class FlussTableSource implements ScanTableSource, SupportsProjectionPushDown {
    private final String bootstrapServers;
    private final TablePath path;
    private final RowType rowType;
    private final List<String> partitionKeys;
    private final StartupMode startup;
    private final boolean streaming;
    private final long discoveryIntervalMs;
    private final int fetchMaxBytes;
    private final int fetchWaitMs;
    private int[] projection;

    FlussTableSource(String bootstrapServers, TablePath path, RowType rowType, List<String> partitionKeys,
                     StartupMode startup, boolean streaming, long discoveryIntervalMs, int fetchMaxBytes,
                     int fetchWaitMs, int[] projection) {
        this.bootstrapServers = bootstrapServers;
        this.path = path;
        this.rowType = rowType;
        this.partitionKeys = partitionKeys;
        this.startup = startup;
        this.streaming = streaming;
        this.discoveryIntervalMs = discoveryIntervalMs;
        this.fetchMaxBytes = fetchMaxBytes;
        this.fetchWaitMs = fetchWaitMs;
        this.projection = projection;
    }

    @Override
    public ChangelogMode getChangelogMode() {
        return ChangelogMode.insertOnly();
    }

    @Override
    public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
        RowType readType = rowType;
        if (projection != null) {
            List<RowType.RowField> fields = new ArrayList<>();
            for (int p : projection) {
                fields.add(rowType.getFields().get(p));
            }
            readType = new RowType(fields);
        }
        return SourceProvider.of(new FlussSource(bootstrapServers, path, readType, projection, startup, !streaming,
                partitionKeys.isEmpty() ? 0 : discoveryIntervalMs, fetchMaxBytes, fetchWaitMs));
    }

    @Override
    public boolean supportsNestedProjection() {
        return false;
    }

    @Override
    public void applyProjection(int[][] projectedFields, DataType producedDataType) {
        int[] p = new int[projectedFields.length];
        boolean identity = p.length == rowType.getFieldCount();
        for (int i = 0; i < p.length; i++) {
            p[i] = projectedFields[i][0];
            identity &= p[i] == i;
        }
        // an empty projection (e.g. COUNT(*)) still needs one column to count rows: read the first one
        if (p.length == 0) {
            p = new int[] {0};
            identity = false;
        }
        this.projection = identity ? null : p;
    }

    @Override
    public DynamicTableSource copy() {
        return new FlussTableSource(bootstrapServers, path, rowType, partitionKeys, startup, streaming,
                discoveryIntervalMs, fetchMaxBytes, fetchWaitMs, projection == null ? null : projection.clone());
    }

    @Override
    public String asSummaryString() {
        return "Fluss[" + path + "]";
    }
}
