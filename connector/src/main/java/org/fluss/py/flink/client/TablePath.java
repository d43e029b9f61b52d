package org.fluss.py.flink.client;

import org.fluss.py.rpc.TablePathPb;

import java.io.Serializable;
import java.util.Objects;

/** database.table of a Fluss table. */
public final class TablePath implements Serializable {
    private static final long serialVersionUID = 1L;
    private final String database;
    private final String table;

    public TablePath(String database, String table) {
        this.database = database;
        this.table = table;
    }

    public String database() {
        return database;
    }

    public String table() {
        return table;
    }

    public TablePathPb toPb() {
        return TablePathPb.newBuilder().setDatabaseName(database).setTableName(table).build();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TablePath && ((TablePath) o).database.equals(database)
                && ((TablePath) o).table.equals(table);
    }

    @Override
    public int hashCode() {
        return Objects.hash(database, table);
    }

    @Override
    public String toString() {
        return database + "." + table;
    }
}
