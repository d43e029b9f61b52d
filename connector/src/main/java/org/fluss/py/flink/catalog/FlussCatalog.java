package org.fluss.py.flink.catalog;

import org.apache.flink.table.catalog.AbstractCatalog;
import org.apache.flink.table.catalog.CatalogBaseTable;
import org.apache.flink.table.catalog.CatalogDatabase;
import org.apache.flink.table.catalog.CatalogDatabaseImpl;
import org.apache.flink.table.catalog.CatalogFunction;
import org.apache.flink.table.catalog.CatalogPartition;
import org.apache.flink.table.catalog.CatalogPartitionImpl;
import org.apache.flink.table.catalog.CatalogPartitionSpec;
import org.apache.flink.table.catalog.ObjectPath;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.TableChange;
import org.apache.flink.table.catalog.exceptions.CatalogException;
import org.apache.flink.table.catalog.exceptions.DatabaseAlreadyExistException;
import org.apache.flink.table.catalog.exceptions.DatabaseNotEmptyException;
import org.apache.flink.table.catalog.exceptions.DatabaseNotExistException;
import org.apache.flink.table.catalog.exceptions.FunctionNotExistException;
import org.apache.flink.table.catalog.exceptions.PartitionAlreadyExistsException;
import org.apache.flink.table.catalog.exceptions.PartitionNotExistException;
import org.apache.flink.table.catalog.exceptions.TableAlreadyExistException;
import org.apache.flink.table.catalog.exceptions.TableNotExistException;
import org.apache.flink.table.catalog.exceptions.TableNotPartitionedException;
import org.apache.flink.table.catalog.stats.CatalogColumnStatistics;
import org.apache.flink.table.catalog.stats.CatalogTableStatistics;
import org.apache.flink.table.expressions.Expression;
import org.apache.flink.table.factories.Factory;
import org.fluss.py.flink.client.ConnectionConfig;
import org.fluss.py.flink.client.FlussClient;
import org.fluss.py.flink.client.FlussRpcException;
import org.fluss.py.flink.client.TablePath;
import org.fluss.py.flink.lake.LakeConfig;
import org.fluss.py.flink.table.FlussDynamicTableFactory;
import org.fluss.py.flink.types.FlussTypes;
import org.fluss.py.rpc.AddColumnPb;
import org.fluss.py.rpc.AlterTableRequest;
import org.fluss.py.rpc.CreateDatabaseRequest;
import org.fluss.py.rpc.CreatePartitionRequest;
import org.fluss.py.rpc.CreateTableRequest;
import org.fluss.py.rpc.DatabaseDescriptorPb;
import org.fluss.py.rpc.DatabaseExistsRequest;
import org.fluss.py.rpc.DropDatabaseRequest;
import org.fluss.py.rpc.DropPartitionRequest;
import org.fluss.py.rpc.DropTableRequest;
import org.fluss.py.rpc.GetDatabaseInfoRequest;
import org.fluss.py.rpc.GetDatabaseInfoResponse;
import org.fluss.py.rpc.ListDatabasesRequest;
import org.fluss.py.rpc.ListPartitionInfosRequest;
import org.fluss.py.rpc.ListPartitionInfosResponse;
import org.fluss.py.rpc.ListTablesRequest;
import org.fluss.py.rpc.ListTablesResponse;
import org.fluss.py.rpc.PartitionInfoPb;
import org.fluss.py.rpc.ResetOptionPb;
import org.fluss.py.rpc.SetOptionPb;
import org.fluss.py.rpc.TableChangePb;
import org.fluss.py.rpc.TableExistsRequest;
import org.fluss.py.rpc.TableInfoPb;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The Flink catalog of a Fluss cluster ({@code CREATE CATALOG c WITH ('type'='fluss', 'bootstrap.servers'=...)}):
 * Fluss databases and tables are Flink databases and tables; tables are read and written through
 * {@link FlussDynamicTableFactory}. Every call is an AdminService RPC to the coordinator; Fluss error codes
 * become the matching Flink catalog exceptions.
 */
public class FlussCatalog extends AbstractCatalog {
    private final String bootstrapServers;
    private final ConnectionConfig connection;
    private final long connectTimeoutMs;
    private FlussClient client;

    public FlussCatalog(String name, String defaultDatabase, String bootstrapServers) {
        this(name, defaultDatabase, bootstrapServers, FlussClient.DEFAULT_CONNECT_TIMEOUT_MS);
    }

    public FlussCatalog(String name, String defaultDatabase, String bootstrapServers, long connectTimeoutMs) {
        this(name, defaultDatabase, ConnectionConfig.plaintext(bootstrapServers), connectTimeoutMs);
    }

    public FlussCatalog(String name, String defaultDatabase, ConnectionConfig connection, long connectTimeoutMs) {
        super(name, defaultDatabase);
        this.bootstrapServers = connection.bootstrapServers();
        this.connection = connection;
        this.connectTimeoutMs = connectTimeoutMs;
    }

    @Override
    public Optional<Factory> getFactory() {
        return Optional.of(new FlussDynamicTableFactory(connection));
    }

    /** Connects and checks that the cluster answers, as Flink catalogs do when they open: a wrong address fails
     * {@code CREATE CATALOG} within the connect timeout, naming the address and the cause. */
    @Override
    public void open() throws CatalogException {
        FlussClient c = new FlussClient(connection, 30_000L, connectTimeoutMs);
        try {
            c.checkReachable();
        } catch (RuntimeException e) {
            c.close();
            throw new CatalogException("Catalog '" + getName() + "': " + e.getMessage(), e);
        }
        client = c;
    }

    @Override
    public void close() throws CatalogException {
        if (client != null) {
            client.close();
            client = null;
        }
    }

    private FlussClient client() {
        if (client == null) {
            open();
        }
        return client;
    }

    private static TablePath path(ObjectPath p) {
        return new TablePath(p.getDatabaseName(), p.getObjectName());
    }

    /** The table a read-only virtual table ({@code t$changelog}, {@code t$lake}) reads; else the table itself. */
    private static TablePath readPath(ObjectPath p) {
        String name = p.getObjectName();
        for (String suffix : List.of(FlinkConversions.CHANGELOG_SUFFIX, FlinkConversions.BINLOG_SUFFIX,
                FlinkConversions.LAKE_SUFFIX)) {
            if (name.endsWith(suffix)) {
                return new TablePath(p.getDatabaseName(), name.substring(0, name.length() - suffix.length()));
            }
        }
        return path(p);
    }

    /** A coordinator call (failing over between the bootstrap servers); a failure becomes a CatalogException. */
    private <R extends com.google.protobuf.Message> R admin(
            java.util.function.Function<org.fluss.py.rpc.AdminServiceGrpc.AdminServiceBlockingStub, R> call,
            String what) {
        try {
            return client().adminCall(call, what);
        } catch (FlussRpcException e) {
            throw new CatalogException(e.getMessage(), e);
        }
    }

    /** A coordinator call whose answer's error, if any, becomes a CatalogException with the server's message. */
    private <R extends com.google.protobuf.Message> R checkedAdmin(
            java.util.function.Function<org.fluss.py.rpc.AdminServiceGrpc.AdminServiceBlockingStub, R> call,
            String what) {
        try {
            return FlussClient.checkResponse(client().adminCall(call, what), what);
        } catch (FlussRpcException e) {
            throw new CatalogException(e.getMessage(), e);
        }
    }

    // ------------------------------------------------------------------ procedures (CALL cat.sys.add_acl(...), sys.set_cluster_configs(...))

    @Override
    public List<String> listProcedures(String database) throws DatabaseNotExistException, CatalogException {
        if (!org.fluss.py.flink.procedures.SystemProcedures.SYSTEM_DATABASE.equals(database)) {
            return List.of();
        }
        return org.fluss.py.flink.procedures.SystemProcedures.all(this::checkedAdmin).keySet().stream().sorted()
                .toList();
    }

    @Override
    public org.apache.flink.table.procedures.Procedure getProcedure(ObjectPath p)
            throws org.apache.flink.table.catalog.exceptions.ProcedureNotExistException, CatalogException {
        org.apache.flink.table.procedures.Procedure procedure =
                org.fluss.py.flink.procedures.SystemProcedures.SYSTEM_DATABASE.equals(p.getDatabaseName())
                        ? org.fluss.py.flink.procedures.SystemProcedures.all(this::checkedAdmin).get(p.getObjectName())
                        : null;
        if (procedure == null) {
            throw new org.apache.flink.table.catalog.exceptions.ProcedureNotExistException(getName(), p);
        }
        return procedure;
    }

    // ------------------------------------------------------------------ databases

    @Override
    public List<String> listDatabases() {
        return admin(a -> a.listDatabases(ListDatabasesRequest.getDefaultInstance()),
                "ListDatabases").getDatabaseNamesList();
    }

    @Override
    public CatalogDatabase getDatabase(String name) throws DatabaseNotExistException {
        GetDatabaseInfoResponse r = admin(a -> a.getDatabaseInfo(
                GetDatabaseInfoRequest.newBuilder().setDatabaseName(name).build()), "GetDatabaseInfo");
        if (r.getError().getCode() == FlussRpcException.DATABASE_NOT_EXIST) {
            throw new DatabaseNotExistException(getName(), name);
        }
        check(r.getError(), "Database " + name);
        DatabaseDescriptorPb d = r.getDatabaseInfo().getDescriptorPb();
        return new CatalogDatabaseImpl(new HashMap<>(d.getCustomPropertiesMap()),
                d.getHasComment() ? d.getComment() : null);
    }

    @Override
    public boolean databaseExists(String name) {
        return admin(a -> a.databaseExists(DatabaseExistsRequest.newBuilder().setDatabaseName(name)
                .build()), "DatabaseExists").getExists();
    }

    @Override
    public void createDatabase(String name, CatalogDatabase db, boolean ignoreIfExists)
            throws DatabaseAlreadyExistException {
        DatabaseDescriptorPb.Builder d = DatabaseDescriptorPb.newBuilder();
        if (db != null) {
            d.putAllCustomProperties(db.getProperties());
            if (db.getComment() != null && !db.getComment().isEmpty()) {
                d.setComment(db.getComment()).setHasComment(true);
            }
        }
        var r = admin(a -> a.createDatabase(CreateDatabaseRequest.newBuilder().setDatabaseName(name)
                .setDescriptorPb(d).setIgnoreIfExists(ignoreIfExists).build()), "CreateDatabase");
        if (r.getError().getCode() == FlussRpcException.DATABASE_ALREADY_EXIST) {
            throw new DatabaseAlreadyExistException(getName(), name);
        }
        check(r.getError(), "Create database " + name);
    }

    @Override
    public void dropDatabase(String name, boolean ignoreIfNotExists, boolean cascade)
            throws DatabaseNotExistException, DatabaseNotEmptyException {
        var r = admin(a -> a.dropDatabase(DropDatabaseRequest.newBuilder().setDatabaseName(name)
                .setIgnoreIfNotExists(ignoreIfNotExists).setCascade(cascade).build()), "DropDatabase");
        if (r.getError().getCode() == FlussRpcException.DATABASE_NOT_EXIST) {
            throw new DatabaseNotExistException(getName(), name);
        }
        if (r.getError().getCode() == FlussRpcException.DATABASE_NOT_EMPTY) {
            throw new DatabaseNotEmptyException(getName(), name);
        }
        check(r.getError(), "Drop database " + name);
    }

    @Override
    public void alterDatabase(String name, CatalogDatabase db, boolean ignoreIfNotExists) {
        throw new UnsupportedOperationException("ALTER DATABASE is not supported by the Fluss catalog");
    }

    // ------------------------------------------------------------------ tables

    @Override
    public List<String> listTables(String database) throws DatabaseNotExistException {
        ListTablesResponse r = admin(a -> a.listTables(ListTablesRequest.newBuilder()
                .setDatabaseName(database).build()), "ListTables");
        if (r.getError().getCode() == FlussRpcException.DATABASE_NOT_EXIST) {
            throw new DatabaseNotExistException(getName(), database);
        }
        check(r.getError(), "List tables of " + database);
        return r.getTableNamesList();
    }

    @Override
    public List<String> listViews(String database) {
        return Collections.emptyList();
    }

    @Override
    public CatalogBaseTable getTable(ObjectPath p) throws TableNotExistException {
        try {
            String name = p.getObjectName();
            if (name.endsWith(FlinkConversions.CHANGELOG_SUFFIX)) { // the t$changelog virtual table
                ObjectPath base = new ObjectPath(p.getDatabaseName(),
                        name.substring(0, name.length() - FlinkConversions.CHANGELOG_SUFFIX.length()));
                return FlinkConversions.changelogTable(client().tableInfo(path(base)), bootstrapServers);
            }
            if (name.endsWith(FlinkConversions.BINLOG_SUFFIX)) { // the t$binlog virtual table (primary keys only)
                ObjectPath base = new ObjectPath(p.getDatabaseName(),
                        name.substring(0, name.length() - FlinkConversions.BINLOG_SUFFIX.length()));
                try {
                    return FlinkConversions.binlogTable(client().tableInfo(path(base)), bootstrapServers);
                } catch (IllegalArgumentException e) {
                    throw new CatalogException(e.getMessage());
                }
            }
            if (name.endsWith(FlinkConversions.LAKE_SUFFIX)) { // the t$lake virtual table: + system columns
                ObjectPath base = new ObjectPath(p.getDatabaseName(),
                        name.substring(0, name.length() - FlinkConversions.LAKE_SUFFIX.length()));
                TableInfoPb info = client().tableInfo(path(base));
                if (!LakeConfig.isLakeEnabled(info)) {
                    throw new CatalogException("Table " + base.getFullName() + " is not lake-enabled "
                            + "('" + LakeConfig.ENABLED + "' = 'true'), so it has no " + name);
                }
                return FlinkConversions.lakeTable(info, bootstrapServers);
            }
            return FlinkConversions.toFlink(client().tableInfo(path(p)), bootstrapServers);
        } catch (FlussRpcException e) {
            if (e.code() == FlussRpcException.TABLE_NOT_EXIST || e.code() == FlussRpcException.DATABASE_NOT_EXIST) {
                throw new TableNotExistException(getName(), p);
            }
            throw new CatalogException(e.getMessage(), e);
        }
    }

    @Override
    public boolean tableExists(ObjectPath p) {
        return admin(a -> a.tableExists(TableExistsRequest.newBuilder().setTablePath(path(p).toPb())
                .build()), "TableExists").getExists();
    }

    @Override
    public void dropTable(ObjectPath p, boolean ignoreIfNotExists) throws TableNotExistException {
        var r = admin(a -> a.dropTable(DropTableRequest.newBuilder().setTablePath(path(p).toPb())
                .setIgnoreIfNotExists(ignoreIfNotExists).build()), "DropTable");
        if (r.getError().getCode() == FlussRpcException.TABLE_NOT_EXIST) {
            throw new TableNotExistException(getName(), p);
        }
        check(r.getError(), "Drop table " + p.getFullName());
    }

    @Override
    public void renameTable(ObjectPath p, String newName, boolean ignoreIfNotExists) {
        throw new UnsupportedOperationException("Fluss tables cannot be renamed");
    }

    @Override
    public void createTable(ObjectPath p, CatalogBaseTable table, boolean ignoreIfExists)
            throws TableAlreadyExistException, DatabaseNotExistException {
        if (!(table instanceof ResolvedCatalogTable)) {
            throw new CatalogException("Only tables can be created in the Fluss catalog, not views (" + p + ")");
        }
        var d = FlinkConversions.toFluss(p.getFullName(), (ResolvedCatalogTable) table);
        var r = admin(a -> a.createTable(CreateTableRequest.newBuilder().setTablePath(path(p).toPb())
                .setDescriptorPb(d).setIgnoreIfExists(ignoreIfExists).build()), "CreateTable");
        int code = r.getError().getCode();
        if (code == FlussRpcException.TABLE_ALREADY_EXIST) {
            throw new TableAlreadyExistException(getName(), p);
        }
        if (code == FlussRpcException.DATABASE_NOT_EXIST) {
            throw new DatabaseNotExistException(getName(), p.getDatabaseName());
        }
        check(r.getError(), "Create table " + p.getFullName());
    }

    /**
     * A whole new table definition (the older catalog API): the option differences from the stored table become
     * SET / RESET changes; anything else must go through {@code ALTER TABLE ... SET / RESET}.
     */
    @Override
    public void alterTable(ObjectPath p, CatalogBaseTable newTable, boolean ignoreIfNotExists)
            throws TableNotExistException {
        Map<String, String> old;
        try {
            old = getTable(p).getOptions();
        } catch (TableNotExistException e) {
            if (ignoreIfNotExists) {
                return;
            }
            throw e;
        }
        List<TableChange> changes = new ArrayList<>();
        Map<String, String> now = newTable.getOptions();
        for (Map.Entry<String, String> e : now.entrySet()) {
            if (!e.getValue().equals(old.get(e.getKey()))) {
                changes.add(TableChange.set(e.getKey(), e.getValue()));
            }
        }
        for (String key : old.keySet()) {
            if (!now.containsKey(key)) {
                changes.add(TableChange.reset(key));
            }
        }
        alterTable(p, newTable, changes, ignoreIfNotExists);
    }

    /**
     * {@code ALTER TABLE t SET ('k' = 'v')}, {@code RESET ('k')} and {@code ADD (c type [COMMENT '...'])}: sent to
     * the coordinator as one AlterTable request (all or nothing), which accepts the table options Fluss allows to
     * change on a live table, keeps connector options as custom properties and appends nullable physical columns
     * (a new schema id; NOT NULL, FIRST / AFTER and existing names are refused there, naming the column); every
     * other kind of change is refused here, naming it.
     */
    @Override
    public void alterTable(ObjectPath p, CatalogBaseTable newTable, List<TableChange> tableChanges,
                           boolean ignoreIfNotExists) throws TableNotExistException {
        AlterTableRequest.Builder request = AlterTableRequest.newBuilder().setTablePath(path(p).toPb())
                .setIgnoreIfNotExists(ignoreIfNotExists);
        boolean derivedSchemaChanged = false;
        for (TableChange change : tableChanges) {
            if (change instanceof TableChange.SetOption) {
                TableChange.SetOption set = (TableChange.SetOption) change;
                reservedKey(p, set.getKey());
                request.addChanges(set(set.getKey(), set.getValue()));
            } else if (change instanceof TableChange.ResetOption) {
                reservedKey(p, ((TableChange.ResetOption) change).getKey());
                request.addChanges(reset(((TableChange.ResetOption) change).getKey()));
            } else if (isDerivedSchemaChange(change)) {
                derivedSchemaChanged = true;
            } else if (change instanceof TableChange.AddColumn) {  // a physical column: ALTER TABLE ADD
                request.addChanges(addColumn((TableChange.AddColumn) change));
                // computed columns are stored by position in the Flink schema: recompute them with the new one
                derivedSchemaChanged = newTable instanceof ResolvedCatalogTable;
            } else if (change instanceof TableChange.DropColumn && newTable instanceof ResolvedCatalogTable
                    && droppedComputedColumn(p, ((TableChange.DropColumn) change).getColumnName())) {
                derivedSchemaChanged = true;
            } else {
                throw new CatalogException("ALTER TABLE " + p.getFullName() + ": '" + describe(change)
                        + "' is not supported by Fluss tables yet (supported: SET (...) and RESET (...) of "
                        + "table options; ADD of nullable columns after the last one; adding, changing and "
                        + "dropping watermarks and computed columns)");
            }
        }
        if (derivedSchemaChanged) {
            if (!(newTable instanceof ResolvedCatalogTable)) {
                throw new CatalogException("ALTER TABLE " + p.getFullName() + ": the new table is not resolved");
            }
            Map<String, String> now = FlinkSchemaProperties.serialize(p.getFullName(),
                    ((ResolvedCatalogTable) newTable).getResolvedSchema());
            Map<String, String> before;
            try {
                before = FlinkSchemaProperties.schemaKeys(client().tableInfo(path(p)).getDescriptorPb()
                        .getCustomPropertiesMap());
            } catch (FlussRpcException e) {
                if (e.code() == FlussRpcException.TABLE_NOT_EXIST) {
                    if (ignoreIfNotExists) {
                        return;
                    }
                    throw new TableNotExistException(getName(), p);
                }
                throw new CatalogException(e.getMessage(), e);
            }
            for (String key : before.keySet()) {
                if (!now.containsKey(key)) {
                    request.addChanges(reset(key));
                }
            }
            now.forEach((k, v) -> {
                if (!v.equals(before.get(k))) {
                    request.addChanges(set(k, v));
                }
            });
        }
        if (request.getChangesCount() == 0) {
            return;
        }
        var r = admin(a -> a.alterTable(request.build()), "AlterTable");
        if (r.getError().getCode() == FlussRpcException.TABLE_NOT_EXIST) {
            throw new TableNotExistException(getName(), p);
        }
        check(r.getError(), "Alter table " + p.getFullName());
    }

    /** Whether {@code column} of the stored table is a computed one (not one of the Fluss table's columns). */
    private boolean droppedComputedColumn(ObjectPath p, String column) {
        try {
            Map<String, String> custom = client().tableInfo(path(p)).getDescriptorPb().getCustomPropertiesMap();
            return FlinkSchemaProperties.computedColumns(custom).values().stream().anyMatch(c -> c.name.equals(column));
        } catch (FlussRpcException e) {
            return false; // reported by the AlterTable request itself
        }
    }

    private static TableChangePb set(String key, String value) {
        return TableChangePb.newBuilder().setSetOption(SetOptionPb.newBuilder().setKey(key).setValue(value)).build();
    }

    private static TableChangePb addColumn(TableChange.AddColumn add) {
        org.apache.flink.table.catalog.Column column = add.getColumn();
        AddColumnPb.Builder b = AddColumnPb.newBuilder().setName(column.getName())
                .setDataType(FlussTypes.toFluss(column.getDataType().getLogicalType()));
        column.getComment().ifPresent(c -> b.setComment(c).setHasComment(true));
        TableChange.ColumnPosition position = add.getPosition();
        if (position instanceof TableChange.First) {
            b.setPosition("FIRST");
        } else if (position instanceof TableChange.After) {
            b.setPosition("AFTER " + ((TableChange.After) position).column());
        } else {
            b.setPosition("LAST");
        }
        return TableChangePb.newBuilder().setAddColumn(b).build();
    }

    private static TableChangePb reset(String key) {
        return TableChangePb.newBuilder().setResetOption(ResetOptionPb.newBuilder().setKey(key)).build();
    }

    private static void reservedKey(ObjectPath p, String key) {
        if (FlinkSchemaProperties.isSchemaKey(key)) {
            throw new CatalogException("ALTER TABLE " + p.getFullName() + ": option '" + key + "' is reserved for "
                    + "the computed columns and watermarks the catalog stores; change them with ALTER TABLE ADD / "
                    + "MODIFY / DROP");
        }
    }

    /** A change of what the catalog keeps in custom properties: watermarks and computed columns. */
    private static boolean isDerivedSchemaChange(TableChange change) {
        if (change instanceof TableChange.AddWatermark || change instanceof TableChange.ModifyWatermark
                || change instanceof TableChange.DropWatermark) {
            return true;
        }
        if (change instanceof TableChange.AddColumn) {
            return !((TableChange.AddColumn) change).getColumn().isPhysical();
        }
        if (change instanceof TableChange.ModifyColumn) {
            TableChange.ModifyColumn m = (TableChange.ModifyColumn) change;
            return !m.getOldColumn().isPhysical() && !m.getNewColumn().isPhysical();
        }
        return false;
    }

    private static String describe(TableChange change) {
        try {
            return change.toString().trim();
        } catch (RuntimeException e) {
            return change.getClass().getSimpleName();
        }
    }

    // ------------------------------------------------------------------ partitions

    private static Map<String, String> spec(CatalogPartitionSpec s) {
        return s == null ? Collections.emptyMap() : s.getPartitionSpec();
    }

    @Override
    public List<CatalogPartitionSpec> listPartitions(ObjectPath p)
            throws TableNotExistException, TableNotPartitionedException {
        return listPartitions(p, null);
    }

    @Override
    public List<CatalogPartitionSpec> listPartitions(ObjectPath p, CatalogPartitionSpec filter)
            throws TableNotExistException, TableNotPartitionedException {
        ListPartitionInfosResponse r = admin(a -> a.listPartitionInfos(ListPartitionInfosRequest
                .newBuilder().setTablePath(readPath(p).toPb()).putAllPartitionSpec(spec(filter)).build()),
                "ListPartitionInfos");
        int code = r.getError().getCode();
        if (code == FlussRpcException.TABLE_NOT_EXIST) {
            throw new TableNotExistException(getName(), p);
        }
        if (code == 37) {
            throw new TableNotPartitionedException(getName(), p);
        }
        check(r.getError(), "Partitions of " + p.getFullName());
        List<CatalogPartitionSpec> out = new ArrayList<>();
        for (PartitionInfoPb info : r.getPartitionsList()) {
            out.add(new CatalogPartitionSpec(new HashMap<>(info.getPartitionSpecMap())));
        }
        return out;
    }

    @Override
    public List<CatalogPartitionSpec> listPartitionsByFilter(ObjectPath p, List<Expression> filters) {
        throw new UnsupportedOperationException("listPartitionsByFilter");
    }

    @Override
    public CatalogPartition getPartition(ObjectPath p, CatalogPartitionSpec s) throws PartitionNotExistException {
        if (!partitionExists(p, s)) {
            throw new PartitionNotExistException(getName(), p, s);
        }
        return new CatalogPartitionImpl(Collections.emptyMap(), null);
    }

    @Override
    public boolean partitionExists(ObjectPath p, CatalogPartitionSpec s) {
        try {
            return listPartitions(p, s).stream().anyMatch(x -> x.equals(s));
        } catch (TableNotExistException | TableNotPartitionedException e) {
            return false;
        }
    }

    @Override
    public void createPartition(ObjectPath p, CatalogPartitionSpec s, CatalogPartition partition,
                                boolean ignoreIfExists) throws PartitionAlreadyExistsException {
        var r = admin(a -> a.createPartition(CreatePartitionRequest.newBuilder()
                .setTablePath(path(p).toPb()).putAllPartitionSpec(spec(s)).setIgnoreIfExists(ignoreIfExists)
                .build()), "CreatePartition");
        if (r.getError().getCode() == FlussRpcException.PARTITION_ALREADY_EXISTS) {
            throw new PartitionAlreadyExistsException(getName(), p, s);
        }
        check(r.getError(), "Create partition " + s + " of " + p.getFullName());
    }

    @Override
    public void dropPartition(ObjectPath p, CatalogPartitionSpec s, boolean ignoreIfNotExists)
            throws PartitionNotExistException {
        var r = admin(a -> a.dropPartition(DropPartitionRequest.newBuilder()
                .setTablePath(path(p).toPb()).putAllPartitionSpec(spec(s)).setIgnoreIfNotExists(ignoreIfNotExists)
                .build()), "DropPartition");
        if (r.getError().getCode() == FlussRpcException.PARTITION_NOT_EXISTS) {
            throw new PartitionNotExistException(getName(), p, s);
        }
        check(r.getError(), "Drop partition " + s + " of " + p.getFullName());
    }

    @Override
    public void alterPartition(ObjectPath p, CatalogPartitionSpec s, CatalogPartition n, boolean ignore) {
        throw new UnsupportedOperationException("ALTER PARTITION is not supported by the Fluss catalog");
    }

    // ------------------------------------------------------------------ functions and statistics (none)

    @Override
    public List<String> listFunctions(String database) {
        return Collections.emptyList();
    }

    @Override
    public CatalogFunction getFunction(ObjectPath p) throws FunctionNotExistException {
        throw new FunctionNotExistException(getName(), p);
    }

    @Override
    public boolean functionExists(ObjectPath p) {
        return false;
    }

    @Override
    public void createFunction(ObjectPath p, CatalogFunction f, boolean ignoreIfExists) {
        throw new UnsupportedOperationException("The Fluss catalog does not store functions");
    }

    @Override
    public void alterFunction(ObjectPath p, CatalogFunction f, boolean ignoreIfNotExists) {
        throw new UnsupportedOperationException("The Fluss catalog does not store functions");
    }

    @Override
    public void dropFunction(ObjectPath p, boolean ignoreIfNotExists) {
        throw new UnsupportedOperationException("The Fluss catalog does not store functions");
    }

    @Override
    public CatalogTableStatistics getTableStatistics(ObjectPath p) {
        return CatalogTableStatistics.UNKNOWN;
    }

    @Override
    public CatalogColumnStatistics getTableColumnStatistics(ObjectPath p) {
        return CatalogColumnStatistics.UNKNOWN;
    }

    @Override
    public CatalogTableStatistics getPartitionStatistics(ObjectPath p, CatalogPartitionSpec s) {
        return CatalogTableStatistics.UNKNOWN;
    }

    @Override
    public CatalogColumnStatistics getPartitionColumnStatistics(ObjectPath p, CatalogPartitionSpec s) {
        return CatalogColumnStatistics.UNKNOWN;
    }

    @Override
    public void alterTableStatistics(ObjectPath p, CatalogTableStatistics s, boolean ignore) {}

    @Override
    public void alterTableColumnStatistics(ObjectPath p, CatalogColumnStatistics s, boolean ignore) {}

    @Override
    public void alterPartitionStatistics(ObjectPath p, CatalogPartitionSpec ps, CatalogTableStatistics s,
                                         boolean ignore) {}

    @Override
    public void alterPartitionColumnStatistics(ObjectPath p, CatalogPartitionSpec ps, CatalogColumnStatistics s,
                                               boolean ignore) {}

    private static void check(org.fluss.py.rpc.ErrorInfo e, String what) {
        if (e.getCode() != 0) {
            throw new CatalogException(what + ": " + e.getMessage() + " (Fluss error code " + e.getCode() + ")");
        }
    }
}
