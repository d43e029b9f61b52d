package org.fluss.py.flink.lookup;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.LookupFunction;

import java.util.Collection;

/** Synchronous lookup join function ({@code 'lookup.async'='false'}): one Lookup/PrefixLookup per key row. */
public final class FlussLookupFunction extends LookupFunction {
    private static final long serialVersionUID = 1L;

    private final Lookuper lookuper;

    public FlussLookupFunction(Lookuper lookuper) {
        this.lookuper = lookuper;
    }

    @Override
    public void open(FunctionContext context) {
        lookuper.open();
    }

    @Override
    public Collection<RowData> lookup(RowData keyRow) {
        return lookuper.lookup(keyRow);
    }

    @Override
    public void close() {
        lookuper.close();
    }
}
