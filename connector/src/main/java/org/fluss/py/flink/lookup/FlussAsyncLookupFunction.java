package org.fluss.py.flink.lookup;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.AsyncLookupFunction;
import org.apache.flink.table.functions.FunctionContext;

import java.util.Collection;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Asynchronous lookup join function ({@code 'lookup.async'='true'}, the default): lookups run on a small pool of
 * daemon threads, so Flink's async operator keeps many keys in flight while each waits for its RPC.
 */
public final class FlussAsyncLookupFunction extends AsyncLookupFunction {
    private static final long serialVersionUID = 1L;
    private static final int THREADS = 8;

    private final Lookuper lookuper;
    private transient ExecutorService pool;

    public FlussAsyncLookupFunction(Lookuper lookuper) {
        this.lookuper = lookuper;
    }

    @Override
    public void open(FunctionContext context) {
        lookuper.open();
        pool = Executors.newFixedThreadPool(THREADS, r -> {
            Thread t = new Thread(r, "fluss-lookup");
            t.setDaemon(true);
            return t;
        });
    }

    @Override
    public CompletableFuture<Collection<RowData>> asyncLookup(RowData keyRow) {
        org.apache.flink.table.data.GenericRowData key = lookuper.toTableRow(keyRow); // before keyRow is reused
        return CompletableFuture.supplyAsync(() -> lookuper.lookupKey(key), pool);
    }

    @Override
    public void close() throws Exception {
        if (pool != null) {
            pool.shutdownNow();
            pool.awaitTermination(5, TimeUnit.SECONDS);
        }
        lookuper.close();
    }
}
