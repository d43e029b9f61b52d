package org.fluss.py.flink.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.fluss.py.flink.client.ConnectionConfig;
import org.fluss.py.flink.client.FlussRpcException;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.record.ArrowBatchReader;
import org.fluss.py.flink.record.LogBatch;
import org.fluss.py.rpc.AdminServiceGrpc;
import org.fluss.py.rpc.BucketMetadataPb;
import org.fluss.py.rpc.ColumnPb;
import org.fluss.py.rpc.ErrorInfo;
import org.fluss.py.rpc.GetMetadataRequest;
import org.fluss.py.rpc.GetMetadataResponse;
import org.fluss.py.rpc.GetTableInfoRequest;
import org.fluss.py.rpc.GetTableInfoResponse;
import org.fluss.py.rpc.InitWriterRequest;
import org.fluss.py.rpc.InitWriterResponse;
import org.fluss.py.rpc.ProduceBucketPb;
import org.fluss.py.rpc.ProduceBucketResultPb;
import org.fluss.py.rpc.ProduceLogRequest;
import org.fluss.py.rpc.ProduceLogResponse;
import org.fluss.py.rpc.SchemaPb;
import org.fluss.py.rpc.ServerNodePb;
import org.fluss.py.rpc.TableDescriptorPb;
import org.fluss.py.rpc.TableInfoPb;
import org.fluss.py.rpc.TableMetadataPb;
import org.fluss.py.rpc.TabletServiceGrpc;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A sink writer whose bucket forgot its writer (the bucket's batches expired from the log, or the log restarted
 * without its writer state) keeps writing: the leader answers UNKNOWN_WRITER_ID to a batch sequence above 0 of a
 * writer it has no batch of, and the writer sends the refused batches again from sequence 0, each row once.
 * The cluster is a fake coordinator and a fake tablet server on loopback that keep a writer's state as Fluss's
 * leader does (next sequence per writer; no state: only sequence 0 is taken).
 */
class SinkUnknownWriterTest {
    private static final long TABLE_ID = 7;
    private static final long WRITER_ID = 42;
    private static final int OUT_OF_ORDER_SEQUENCE = 31; // Fluss's OUT_OF_ORDER_SEQUENCE_EXCEPTION
    private static final TablePath PATH = new TablePath("db", "events");
    private static final RowType ROW = RowType.of(new BigIntType(), new VarCharType(VarCharType.MAX_LENGTH));

    private final List<Server> servers = new ArrayList<>();

    /** The leader of bucket 0: appends in writer-sequence order, and forgets every writer on {@link #forget}. */
    private static final class FakeTablet extends TabletServiceGrpc.TabletServiceImplBase {
        final List<Long> appendedIds = new ArrayList<>(); // the ids of the rows appended, in order
        final List<Integer> refusedSequences = new ArrayList<>();
        final List<Integer> appendedSequences = new ArrayList<>();
        int nextSequence = -1; // -1: the writer is unknown
        int offset;

        synchronized void forget() {
            nextSequence = -1;
        }

        @Override
        public synchronized void produceLog(ProduceLogRequest request, StreamObserver<ProduceLogResponse> out) {
            ProduceLogResponse.Builder response = ProduceLogResponse.newBuilder();
            for (ProduceBucketPb b : request.getBucketsList()) {
                ProduceBucketResultPb.Builder r = ProduceBucketResultPb.newBuilder()
                        .setPartitionId(b.getPartitionId()).setBucketId(b.getBucketId());
                List<LogBatch.View> batches = LogBatch.parse(b.getRecords().toByteArray());
                int first = batches.get(0).batchSequence;
                if (nextSequence < 0 && first != 0) {
                    refusedSequences.add(first);
                    r.setError(ErrorInfo.newBuilder().setCode(FlussRpcException.UNKNOWN_WRITER_ID)
                            .setMessage("writer " + WRITER_ID + " is unknown to this bucket"));
                } else if (nextSequence >= 0 && first != nextSequence) {
                    r.setError(ErrorInfo.newBuilder().setCode(OUT_OF_ORDER_SEQUENCE)
                            .setMessage("expected sequence " + nextSequence + ", got " + first));
                } else {
                    r.setBaseOffset(offset);
                    for (LogBatch.View v : batches) {
                        assertTrue(v.isValid(), "a resent batch carries a CRC that matches its new sequence");
                        assertEquals(WRITER_ID, v.writerId);
                        appendedSequences.add(v.batchSequence);
                        appendedIds.addAll(ids(v));
                        offset += v.recordCount;
                        nextSequence = v.batchSequence + 1;
                    }
                }
                response.addBuckets(r);
            }
            out.onNext(response.build());
            out.onCompleted();
        }
    }

    private static List<Long> ids(LogBatch.View v) {
        try (org.apache.arrow.memory.BufferAllocator allocator = new org.apache.arrow.memory.RootAllocator();
             ArrowBatchReader reader = new ArrowBatchReader(ROW, allocator)) {
            List<Long> out = new ArrayList<>();
            for (RowData row : reader.read(v, 0)) {
                out.add(row.getLong(0));
            }
            return out;
        }
    }

    /** The coordinator of a one-bucket log table led by tablet server 1 at {@code tabletPort}. */
    private static final class FakeCoordinator extends AdminServiceGrpc.AdminServiceImplBase {
        final int tabletPort;

        FakeCoordinator(int tabletPort) {
            this.tabletPort = tabletPort;
        }

        private TableInfoPb info() {
            SchemaPb schema = SchemaPb.newBuilder()
                    .addColumns(ColumnPb.newBuilder().setName("id").setDataType("BIGINT"))
                    .addColumns(ColumnPb.newBuilder().setName("name").setDataType("STRING")).build();
            return TableInfoPb.newBuilder().setTablePath(PATH.toPb()).setTableId(TABLE_ID).setSchemaId(1)
                    .setDescriptorPb(TableDescriptorPb.newBuilder().setSchema(schema).setBucketCount(1)).build();
        }

        @Override
        public void getTableInfo(GetTableInfoRequest request, StreamObserver<GetTableInfoResponse> out) {
            out.onNext(GetTableInfoResponse.newBuilder().setTableInfo(info()).build());
            out.onCompleted();
        }

        @Override
        public void initWriter(InitWriterRequest request, StreamObserver<InitWriterResponse> out) {
            out.onNext(InitWriterResponse.newBuilder().setWriterId(WRITER_ID).build());
            out.onCompleted();
        }

        @Override
        public void getMetadata(GetMetadataRequest request, StreamObserver<GetMetadataResponse> out) {
            out.onNext(GetMetadataResponse.newBuilder()
                    .addTabletServers(ServerNodePb.newBuilder().setId(1).setHost("127.0.0.1").setPort(tabletPort)
                            .setServerType("TabletServer"))
                    .addTables(TableMetadataPb.newBuilder().setTableInfo(info())
                            .addBuckets(BucketMetadataPb.newBuilder().setBucketId(0).setLeaderId(1)
                                    .addReplicas(1).addIsr(1)))
                    .build());
            out.onCompleted();
        }
    }

    private int serve(io.grpc.BindableService service) throws Exception {
        Server s = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(service).build()
                .start();
        servers.add(s);
        return s.getPort();
    }

    @AfterEach
    void stop() throws Exception {
        for (Server s : servers) {
            s.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    private static void write(FlussSinkWriter writer, long from, long to) throws Exception {
        for (long id = from; id < to; id++) {
            writer.write(GenericRowData.of(id, StringData.fromString("row " + id)), null);
        }
    }

    @Test
    void aBucketThatForgotTheWriterGetsTheRefusedBatchesAgainFromSequenceZero() throws Exception {
        FakeTablet tablet = new FakeTablet();
        int coordinatorPort = serve(new FakeCoordinator(serve(tablet)));
        SinkSettings settings = new SinkSettings("all", 10, true, "STICKY", false, 10);
        FlussSinkWriter writer = new FlussSinkWriter(ConnectionConfig.plaintext("127.0.0.1:" + coordinatorPort),
                PATH, ROW, settings, 0);
        try {
            write(writer, 0, 30); // batches of 10 rows: sequences 0, 1, 2
            writer.flush(false);
            assertEquals(Arrays.asList(0, 1, 2), tablet.appendedSequences);

            tablet.forget(); // e.g. the leader restarted after the writer's batches expired from its log
            write(writer, 30, 55); // sequences 3, 4 and a partial batch 5: refused, then 0, 1, 2
            writer.flush(false);
            assertEquals(List.of(3), tablet.refusedSequences, "one refusal, then the batches come again");
            assertEquals(Arrays.asList(0, 1, 2, 0, 1, 2), tablet.appendedSequences);

            write(writer, 55, 60); // the writer goes on from the restarted sequences
            writer.flush(true);
            assertEquals(Arrays.asList(0, 1, 2, 0, 1, 2, 3), tablet.appendedSequences);
        } finally {
            writer.close();
        }
        List<Long> expected = new ArrayList<>();
        for (long id = 0; id < 60; id++) {
            expected.add(id);
        }
        assertEquals(expected, tablet.appendedIds, "every row once, in order");
    }
}
