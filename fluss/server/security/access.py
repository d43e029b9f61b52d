"""What each RPC needs, checked at the door: the :class:`AccessControl` interceptor (after the Authenticator).

* Server-to-server APIs (:data:`INTERNAL_APIS`, and FetchLog/ListOffsets of a follower) are served only to
  another server of the cluster (``Session.internal``: on the internal listener as the internal principal). A
  client - even a super user - cannot call them, so it cannot impersonate a server.
* With ``authorizer.enabled``, every other API needs the operation on the resource listed in :data:`RULES`
  (Fluss's table of protocols, operations and resources). APIs whose answer is a listing (ListDatabases,
  ListTables, DatabaseExists, TableExists, ListAcls) are filtered by their handler instead
  (:data:`FILTERED_APIS`). An API nobody listed is refused (fail closed).

A rule reads the request and calls ``check(operation, resource)``; table ids are resolved to paths by the server's
``table_path_of`` (a table this server does not know is left to the handler, which answers UNKNOWN_TABLE...).
"""

from __future__ import annotations

from collections.abc import Callable

import grpc

from fluss.acl import OperationType, Resource, ResourceType, binding_from_pb, filter_from_pb
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TablePath
from fluss.rpc.interceptors import UnaryInterceptor, _wrap_unary, api_name, awaitable_handler
from fluss.server.security.authorizer import Authorizer
from fluss.server.security.session import current_session

READ, WRITE, CREATE, DROP, ALTER, DESCRIBE, ALL = (OperationType.READ, OperationType.WRITE, OperationType.CREATE,
                                                   OperationType.DROP, OperationType.ALTER, OperationType.DESCRIBE,
                                                   OperationType.ALL)

INTERNAL_APIS = frozenset({"AdjustIsr", "ControlledShutdown", "CommitKvSnapshot", "GetKvSnapshot",
                           "ReportStorageState", "NotifyLeaderAndIsr", "StopReplica", "OffsetForLeaderEpoch",
                           "CommitRemoteLogManifest", "GetRemoteLogManifest"})
#: Answered to anyone authenticated (the bootstrap call; writer ids are harmless).
OPEN_APIS = frozenset({"GetServerNodes", "InitWriter"})
FILTERED_APIS = frozenset({"ListDatabases", "ListTables", "DatabaseExists", "TableExists", "ListAcls"})

Check = Callable[[OperationType, Resource], None]  # a _Checker: also .somewhere(operation, what)
TablePathOf = Callable[[int], TablePath | None]
Rule = Callable[[object, Check, TablePathOf], None]


def _table(path_pb) -> Resource:
    return Resource.table(path_pb.database_name, path_pb.table_name)


def _by_id(op: OperationType) -> Rule:
    def rule(req, check: Check, path_of: TablePathOf) -> None:
        path = path_of(req.table_id)
        if path is not None:
            check(op, Resource.table(path.database_name, path.table_name))
    return rule


def _fetch(req, check: Check, path_of: TablePathOf) -> None:
    for t in req.tables:
        path = path_of(t.table_id)
        if path is not None:
            check(READ, Resource.table(path.database_name, path.table_name))


def _metadata(req, check: Check, path_of: TablePathOf) -> None:
    for p in req.table_paths:
        check(DESCRIBE, _table(p))
    for ref in req.partitions:
        check(DESCRIBE, _table(ref.table_path))


def _acl_target(resource: Resource) -> Resource:
    """Creating or dropping ACLs needs ALL on the resource; for a table, on its database (Fluss's granularity)."""
    return resource.parent() if resource.type is ResourceType.TABLE else resource


def _lake_commit(req, check: Check, path_of: TablePathOf) -> None:
    path = path_of(req.snapshot.table_id)
    if path is not None:
        check(WRITE, Resource.table(path.database_name, path.table_name))


def _remote_storage_token(req, check: Check, path_of: TablePathOf) -> None:
    """The credentials of ``remote.data.dir`` (to read tiered log segments): READ on some table, database or the
    cluster. Fluss answers anyone authenticated (per-table ACLs are its TODO); the keys handed out here reach
    every table's remote segments, so a principal that may read nothing gets none."""
    check.somewhere(READ, "the remote log storage's credentials (GetFileSystemSecurityToken)")


def _create_acls(req, check: Check, path_of: TablePathOf) -> None:
    for acl in req.acls:
        check(ALL, _acl_target(binding_from_pb(acl).resource))


def _drop_acls(req, check: Check, path_of: TablePathOf) -> None:
    for f in req.filters:
        flt = filter_from_pb(f)
        if flt.resource_name is None or flt.resource_type is ResourceType.ANY:
            check(ALL, Resource.cluster())
        else:
            check(ALL, _acl_target(Resource(flt.resource_type, flt.resource_name)))


RULES: dict[str, Rule] = {
    "CreateDatabase": lambda r, check, _: check(CREATE, Resource.cluster()),
    "DropDatabase": lambda r, check, _: check(DROP, Resource.database(r.database_name)),
    "GetDatabaseInfo": lambda r, check, _: check(DESCRIBE, Resource.database(r.database_name)),
    "CreateTable": lambda r, check, _: check(CREATE, Resource.database(r.table_path.database_name)),
    "DropTable": lambda r, check, _: check(DROP, _table(r.table_path)),
    "AlterTable": lambda r, check, _: check(ALTER, _table(r.table_path)),
    "GetTableInfo": lambda r, check, _: check(DESCRIBE, _table(r.table_path)),
    "CreatePartition": lambda r, check, _: check(WRITE, _table(r.table_path)),
    "DropPartition": lambda r, check, _: check(WRITE, _table(r.table_path)),
    "ListPartitionInfos": lambda r, check, _: check(DESCRIBE, _table(r.table_path)),
    "GetMetadata": _metadata,
    "GetLatestKvSnapshots": lambda r, check, _: check(DESCRIBE, _table(r.table_path)),
    "ListLakeTables": lambda r, check, _: check(DESCRIBE, Resource.cluster()),
    "CommitLakeTableSnapshot": _lake_commit,
    "GetLatestLakeSnapshot": lambda r, check, _: check(DESCRIBE, _table(r.table_path)),
    "CreateAcls": _create_acls,
    "DropAcls": _drop_acls,
    "ProduceLog": _by_id(WRITE),
    "PutKv": _by_id(WRITE),
    "Lookup": _by_id(READ),
    "PrefixLookup": _by_id(READ),
    "ScanKv": _by_id(READ),
    "GetTableStats": _by_id(READ),
    "FetchLog": _fetch,
    "ListOffsets": _by_id(DESCRIBE),
    "DescribeLog": _by_id(DESCRIBE),
    "GetFileSystemSecurityToken": _remote_storage_token,
    # moving replicas between servers is a cluster operation (Kafka: ALTER / DESCRIBE on the cluster)
    "AlterTableAssignment": lambda r, check, _: check(ALTER, Resource.cluster()),
    "ListReassignments": lambda r, check, _: check(DESCRIBE, Resource.cluster()),
    "AddServerTag": lambda r, check, _: check(ALTER, Resource.cluster()),
    "Rebalance": lambda r, check, _: check(ALTER, Resource.cluster()),
    "CancelRebalance": lambda r, check, _: check(ALTER, Resource.cluster()),
    "ListRebalanceProgress": lambda r, check, _: check(DESCRIBE, Resource.cluster()),
    "RemoveServerTag": lambda r, check, _: check(ALTER, Resource.cluster()),
    "AlterClusterConfigs": lambda r, check, _: check(ALTER, Resource.cluster()),
    "DescribeClusterConfigs": lambda r, check, _: check(DESCRIBE, Resource.cluster()),
}


def _is_internal_call(api: str, request) -> bool:
    if api in INTERNAL_APIS:
        return True
    return api in ("FetchLog", "ListOffsets") and getattr(request, "follower_id", -1) >= 0


class _Checker:
    """What a rule calls: ``check(operation, resource)``, or ``check.somewhere(operation, what)`` for an API that
    names no resource but needs the operation on at least one."""

    __slots__ = ("authorizer", "session")

    def __init__(self, authorizer: Authorizer, session) -> None:
        self.authorizer = authorizer
        self.session = session

    def __call__(self, operation: OperationType, resource: Resource) -> None:
        self.authorizer.check(self.session, operation, resource)

    def somewhere(self, operation: OperationType, what: str) -> None:
        if not self.authorizer.allowed_somewhere(self.session, operation):
            raise FlussError(f"Principal {self.session.principal} has no {operation.name} permission on any table, "
                             f"database or the cluster, which {what} needs", ErrorCode.AUTHORIZATION_EXCEPTION)


class AccessControl(UnaryInterceptor):
    def __init__(self, authorizer: Authorizer, table_path_of: TablePathOf) -> None:
        super().__init__()
        self.authorizer = authorizer
        self.table_path_of = table_path_of

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        api = api_name(method)
        inner = awaitable_handler(handler.unary_unary)
        rule = RULES.get(api)
        authorizer = self.authorizer
        path_of = self.table_path_of

        async def behavior(request, context):
            session = current_session()
            if _is_internal_call(api, request):
                if not session.internal:
                    raise FlussError(f"{api} is a server-to-server API: only the cluster's servers may call it "
                                     f"(on the internal listener)", ErrorCode.AUTHORIZATION_EXCEPTION)
            elif authorizer.enabled and not authorizer.is_super(session) and api not in OPEN_APIS \
                    and api not in FILTERED_APIS:
                if rule is None:
                    raise FlussError(f"Principal {session.principal} may not call {api}",
                                     ErrorCode.AUTHORIZATION_EXCEPTION)
                rule(request, _Checker(authorizer, session), path_of)
            return await inner(request, context)

        return _wrap_unary(handler, behavior)
