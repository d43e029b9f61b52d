"""ZooKeeperClient: typed access to the cluster metadata in ZooKeeper; the only module that uses kazoo.

Every method is blocking (kazoo's synchronous API); async callers run them with ``asyncio.to_thread``.
Multi-node changes go through ZooKeeper transactions so that a crash never leaves half-created metadata.
Nodes are read and written as the records of ``data.py`` at the paths of ``paths.py``. Besides metadata, this is
where the servers' ZooKeeper protocols live: the coordinator election (:meth:`ZooKeeperClient.campaign_once`,
:meth:`ZooKeeperClient.publish_active_coordinator`), tablet server registration
(:meth:`ZooKeeperClient.register_tablet_server`), the membership watch, and session state
(:meth:`ZooKeeperClient.on_session_change` with :class:`SessionState`). A ZooKeeper failure outside these surfaces
as a ``FlussError`` naming what was being done, not as a kazoo exception.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.protocol.states import KazooState

from fluss.errors import ErrorCode, FlussError
from fluss.server.zk import paths
from fluss.server.zk.data import (
    Assignment,
    CoordinatorRegistration,
    DatabaseRegistration,
    KvSnapshotRecord,
    LakeSnapshotRecord,
    LeaderAndIsr,
    PartitionRegistration,
    ReassignmentRecord,
    RemoteLogManifestRecord,
    ResourceAcls,
    TableRegistration,
    TabletServerRegistration,
    decode,
    dumps,
    encode,
    loads,
)

log = logging.getLogger(__name__)

#: The most nodes one transaction creates: a CREATE TABLE of many buckets (two nodes each) or a batch of partitions
#: is written in several transactions of at most this many nodes (``ZooKeeperClient._create_in_chunks``). A batch of
#: auto-partitions (64 one-bucket partitions: 320 nodes) stays one transaction; a 1,024-bucket table takes five.
MAX_TRANSACTION_OPS = 512


class SessionState(Enum):
    """The ZooKeeper session as a server sees it (kazoo's states, without kazoo)."""

    CONNECTED = "connected"
    SUSPENDED = "suspended"  # disconnected; the session may still be alive
    LOST = "lost"  # the session expired: every ephemeral node of it is gone


_SESSION_STATES = {KazooState.CONNECTED: SessionState.CONNECTED, KazooState.SUSPENDED: SessionState.SUSPENDED,
                   KazooState.LOST: SessionState.LOST}


@contextmanager
def zookeeper_errors(what: str, code: int = ErrorCode.NETWORK_EXCEPTION) -> Iterator[None]:
    """Turns a ZooKeeper failure inside the block into a ``FlussError`` naming what was being done (code
    ``NETWORK_EXCEPTION`` by default: the caller may retry), so that code outside this package never sees kazoo."""
    try:
        yield
    except KazooException as e:
        raise FlussError(f"Cannot {what}: ZooKeeper failed ({type(e).__name__}); retry", code) from None


class ZooKeeperClient:
    def __init__(self, address: str, root: str = "/fluss", session_timeout_s: float = 6.0) -> None:
        root = "/" + root.strip("/")
        self._zk = KazooClient(hosts=f"{address}{root}", timeout=session_timeout_s)
        self._session_timeout_s = session_timeout_s
        self._address = address
        self._root = root

    @property
    def connected(self) -> bool:
        return bool(self._zk.connected)

    def on_session_change(self, callback: Callable[[SessionState], None]) -> None:
        """Calls ``callback`` (from a kazoo thread; it must not block) whenever the session state changes."""
        self._zk.add_listener(lambda state: callback(_SESSION_STATES[state]))

    def start(self, timeout_s: float = 30.0) -> None:
        # The chroot must exist; create it through a client without chroot.
        boot = KazooClient(hosts=self._address, timeout=10)
        boot.start(timeout=timeout_s)
        try:
            boot.ensure_path(self._root)
        finally:
            boot.stop()
            boot.close()
        self._zk.start(timeout=timeout_s)
        for p in (paths.TABLET_SERVER_IDS, paths.DATABASES, paths.TABLE_ASSIGNMENTS, paths.PARTITION_ASSIGNMENTS,
                  paths.COORDINATORS, paths.ACL_CHANGES, paths.REASSIGNMENTS):
            self._zk.ensure_path(p)

    def close(self) -> None:
        try:
            self._zk.stop()
            self._zk.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            log.debug("error closing zookeeper client", exc_info=True)

    # ------------------------------------------------------------ ACLs

    def list_resource_acls(self) -> dict[tuple[str, str], ResourceAcls]:
        """Every resource's ACLs: (resource type, name) → its node."""
        out: dict[tuple[str, str], ResourceAcls] = {}
        if not self._zk.exists(paths.ACLS):
            return out
        for rtype in self._zk.get_children(paths.ACLS):
            for name in self._zk.get_children(paths.acl_type(rtype)):
                try:
                    data, _ = self._zk.get(paths.acl(rtype, name))
                except NoNodeError:
                    continue
                out[(rtype, name)] = decode(ResourceAcls, data)
        return out

    def update_resource_acls(self, resource_type: str, name: str,
                             change: Callable[[ResourceAcls], ResourceAcls | None]) -> None:
        """Applies ``change`` to a resource's ACLs by versioned compare-and-set (None = no change; an empty list
        removes the node), then bumps ``/acl_changes`` so every server reloads."""
        node = paths.acl(resource_type, name)
        while True:
            try:
                data, stat = self._zk.get(node)
                current, version = decode(ResourceAcls, data), stat.version
            except NoNodeError:
                current, version = ResourceAcls(), -1
            updated = change(current)
            if updated is None:
                return
            try:
                if version < 0:
                    if not updated.acls:
                        return
                    self._zk.create(node, encode(updated), makepath=True)
                elif updated.acls:
                    self._zk.set(node, encode(updated), version=version)
                else:
                    self._zk.delete(node, version=version)
                break
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue
        self._zk.set(paths.ACL_CHANGES, str(time.time_ns()).encode())

    def watch_acl_changes(self, callback: Callable[[], None]) -> None:
        """Calls ``callback()`` now and after every ACL change (from a kazoo thread)."""
        self._zk.ensure_path(paths.ACL_CHANGES)
        self._zk.DataWatch(paths.ACL_CHANGES, lambda _data, _stat: callback())

    # ------------------------------------------------------------ ids

    def next_id(self, seq_path: str) -> int:
        """Allocates the next id from a counter node by versioned compare-and-set."""
        return self.next_ids(seq_path, 1)

    def next_ids(self, seq_path: str, count: int) -> int:
        """Allocates ``count`` consecutive ids from a counter node with one compare-and-set; returns the first."""
        self._zk.ensure_path(seq_path)
        while True:
            data, stat = self._zk.get(seq_path)
            current = int(data or b"0")
            try:
                self._zk.set(seq_path, str(current + count).encode(), version=stat.version)
                return current
            except BadVersionError:
                continue

    # ------------------------------------------------------------ servers

    def register_tablet_server(self, server_id: int, host: str, port: int, wait_s: float = 30.0,
                               metrics_port: int = 0, endpoints: dict[str, str] | None = None,
                               rack: str | None = None) -> int:
        """Creates the ephemeral registration (waiting for a previous session's node to expire); returns the
        server's registration epoch (see :meth:`tablet_server_epoch`)."""
        node = paths.tablet_server(server_id)
        reg = TabletServerRegistration(host, port, int(time.time() * 1000), metrics_port, dict(endpoints or {}),
                                       rack)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                _, stat = self._zk.create(node, encode(reg), ephemeral=True, include_data=True)
                return stat.czxid
            except NodeExistsError:
                if time.monotonic() > deadline:
                    raise FlussError(f"Tablet server id {server_id} is already registered in ZooKeeper",
                                     ErrorCode.UNKNOWN_SERVER_ERROR) from None
                time.sleep(0.2)

    def get_tablet_servers(self) -> dict[int, TabletServerRegistration]:
        out = {}
        for child in self._zk.get_children(paths.TABLET_SERVER_IDS):
            try:
                data, _ = self._zk.get(paths.tablet_server(int(child)))
            except NoNodeError:
                continue
            out[int(child)] = decode(TabletServerRegistration, data)
        return out

    def tablet_server_epoch(self, server_id: int) -> int | None:
        """The registration epoch of a live tablet server: the creation zxid of its ephemeral node, which grows
        with every registration (as Kafka's broker epoch); None if the server is not registered."""
        stat = self._zk.exists(paths.tablet_server(server_id))
        return None if stat is None else stat.czxid

    def watch_tablet_servers(self, callback: Callable[[list[int]], None]) -> None:
        """Calls ``callback(sorted ids)`` now and on every membership change (from a kazoo thread)."""

        def on_change(children: list[str]) -> None:
            callback(sorted(int(c) for c in children))

        self._zk.ChildrenWatch(paths.TABLET_SERVER_IDS, on_change)

    # ------------------------------------------------------------ coordinator epoch

    def bump_coordinator_epoch(self) -> int:
        self._zk.ensure_path(paths.COORDINATOR_EPOCH)
        while True:
            data, stat = self._zk.get(paths.COORDINATOR_EPOCH)
            epoch = int(data or b"0") + 1
            try:
                self._zk.set(paths.COORDINATOR_EPOCH, str(epoch).encode(), version=stat.version)
                return epoch
            except BadVersionError:
                continue

    def get_coordinator_epoch(self) -> int:
        """The latest coordinator epoch (0 before any coordinator became active)."""
        try:
            data, _ = self._zk.get(paths.COORDINATOR_EPOCH)
        except NoNodeError:
            return 0
        return int(data or b"0")

    def get_active_coordinator(self) -> CoordinatorRegistration | None:
        try:
            data, _ = self._zk.get(paths.ACTIVE_COORDINATOR)
        except NoNodeError:
            return None
        return decode(CoordinatorRegistration, data)

    # ------------------------------------------------------------ coordinator election

    def campaign_once(self, candidate: CoordinatorRegistration, wait_s: float = 5.0) -> bool:
        """One round of the election: creates the ephemeral ``/coordinators/active`` node for ``candidate``; if
        another coordinator holds it, waits up to ``wait_s`` for it to go away and returns False (call again)."""
        try:
            self._zk.create(paths.ACTIVE_COORDINATOR, encode(candidate), ephemeral=True)
            return True
        except NodeExistsError:
            gone = threading.Event()
            if self._zk.exists(paths.ACTIVE_COORDINATOR, watch=lambda _event: gone.set()) is not None:
                gone.wait(timeout=wait_s)
            return False

    def publish_active_coordinator(self, registration: CoordinatorRegistration) -> None:
        """The elected coordinator records its epoch in its ``/coordinators/active`` node."""
        self._zk.set(paths.ACTIVE_COORDINATOR, encode(registration))

    # ------------------------------------------------------------ databases

    def create_database(self, name: str, reg: DatabaseRegistration) -> None:
        tx = self._zk.transaction()
        tx.create(paths.database(name), encode(reg))
        tx.create(paths.tables(name), b"")
        _commit(tx, f"create database {name}")

    def get_database(self, name: str) -> DatabaseRegistration | None:
        try:
            data, _ = self._zk.get(paths.database(name))
        except NoNodeError:
            return None
        return decode(DatabaseRegistration, data)

    def list_databases(self) -> list[str]:
        return sorted(self._zk.get_children(paths.DATABASES))

    def delete_database(self, name: str) -> None:
        try:
            self._zk.delete(paths.database(name), recursive=True)
        except NoNodeError:
            pass

    # ------------------------------------------------------------ tables

    def list_tables(self, db: str) -> list[str]:
        try:
            return sorted(self._zk.get_children(paths.tables(db)))
        except NoNodeError:
            return []

    def create_table(self, db: str, table: str, reg: TableRegistration, schema_json: dict,
                     assignment: Assignment | None, leaders: dict[int, LeaderAndIsr]) -> None:
        """Registers a table with its first schema, and (non-partitioned) its assignment and leaders.

        The assignment's nodes (two per bucket) go first, in transactions of at most ``MAX_TRANSACTION_OPS``
        creates; the table's own nodes go in the last one, so the table becomes visible complete or not at all.
        A failure leaves no table, and the assignment nodes already written are removed (a retry allocates a new
        table id anyway)."""
        creates = []
        if assignment is not None:
            creates = _assignment_creates(paths.table_assignment(reg.table_id), reg.table_id, -1, assignment,
                                          leaders)
        visible = [(paths.table(db, table), encode(reg)), (paths.schemas(db, table), b""),
                   (paths.schema(db, table, reg.schema_id), dumps(schema_json)), (paths.partitions(db, table), b"")]
        leftovers = [paths.table_assignment(reg.table_id)] if assignment is not None else []
        self._create_in_chunks(creates, visible, leftovers, f"create table {db}.{table}")

    def get_table(self, db: str, table: str) -> tuple[TableRegistration, dict] | None:
        try:
            data, _ = self._zk.get(paths.table(db, table))
            reg = decode(TableRegistration, data)
            schema_data, _ = self._zk.get(paths.schema(db, table, reg.schema_id))
        except NoNodeError:
            return None
        return reg, loads(schema_data)

    def set_table(self, db: str, table: str, reg: TableRegistration) -> None:
        """Replaces a table's registration (ALTER TABLE: its properties and modification time)."""
        try:
            self._zk.set(paths.table(db, table), encode(reg))
        except NoNodeError:
            raise FlussError(f"Table '{db}.{table}' does not exist", ErrorCode.TABLE_NOT_EXIST) from None
        except KazooException as e:
            raise FlussError(f"Cannot update table {db}.{table}: ZooKeeper failed ({type(e).__name__})",
                             ErrorCode.UNKNOWN_SERVER_ERROR) from e

    def add_schema(self, db: str, table: str, reg: TableRegistration, schema_json: dict) -> None:
        """ALTER TABLE ADD: stores schema ``reg.schema_id`` and the registration that makes it current, atomically
        (the earlier versions stay under ``schemas/``)."""
        tx = self._zk.transaction()
        tx.create(paths.schema(db, table, reg.schema_id), dumps(schema_json))
        tx.set_data(paths.table(db, table), encode(reg))
        _commit(tx, f"add schema {reg.schema_id} of table {db}.{table}")

    def delete_table(self, db: str, table: str, table_id: int, partition_ids: list[int]) -> None:
        """Removes the table's metadata node first (so it is gone for clients), then its assignments."""
        self._delete_trees([paths.table(db, table)])
        self._delete_trees([paths.bucket_root(table_id, pid) for pid in [-1, *partition_ids]])

    # ------------------------------------------------------------ partitions

    def list_partitions(self, db: str, table: str) -> dict[str, PartitionRegistration]:
        out = {}
        try:
            children = self._zk.get_children(paths.partitions(db, table))
        except NoNodeError:
            return out
        for name in children:
            try:
                data, _ = self._zk.get(paths.partition(db, table, name))
            except NoNodeError:
                continue
            out[name] = decode(PartitionRegistration, data)
        return out

    def get_partition(self, db: str, table: str, name: str) -> PartitionRegistration | None:
        try:
            data, _ = self._zk.get(paths.partition(db, table, name))
        except NoNodeError:
            return None
        return decode(PartitionRegistration, data)

    def create_partition(self, db: str, table: str, name: str, reg: PartitionRegistration,
                         assignment: Assignment, leaders: dict[int, LeaderAndIsr]) -> None:
        self.create_partitions(db, table, [(name, reg, assignment, leaders)])

    def create_partitions(self, db: str, table: str,
                          partitions: list[tuple[str, PartitionRegistration, Assignment, dict[int, LeaderAndIsr]]]
                          ) -> None:
        """Registers partitions (name, registration, assignment, leaders): their assignments first, then the
        partition nodes, in transactions of at most ``MAX_TRANSACTION_OPS`` creates (one transaction, one write of
        ZooKeeper's log, for a few partitions of few buckets). A partition node is written after every node of its
        assignment: a partition is visible complete or not at all; on a failure the partitions not yet visible
        have their assignment nodes removed."""
        creates = []
        for _name, reg, assignment, leaders in partitions:
            creates += _assignment_creates(paths.partition_assignment(reg.partition_id), reg.table_id,
                                           reg.partition_id, assignment, leaders)
        visible = [(paths.partition(db, table, name), encode(reg)) for name, reg, _a, _l in partitions]
        leftovers = [paths.partition_assignment(reg.partition_id) for _n, reg, _a, _l in partitions]
        what = (f"create partition {partitions[0][0]} of {db}.{table}" if len(partitions) == 1
                else f"create {len(partitions)} partitions of {db}.{table}")
        self._create_in_chunks(creates, visible, leftovers, what)

    # ------------------------------------------------------------ bounded transactions

    def _create_in_chunks(self, creates: list[tuple[str, bytes]], visible: list[tuple[str, bytes]],
                          leftovers: list[str], what: str) -> None:
        """Creates the nodes of ``creates`` then of ``visible`` (parents before children), in order, in
        transactions of at most ``MAX_TRANSACTION_OPS`` nodes, the nodes of ``visible`` in the last one(s).

        One transaction of thousands of nodes (a CREATE TABLE of 1,024 buckets writes 2,050) holds ZooKeeper's
        request pipeline, heartbeats of every session included, for as long as it takes to apply: on a loaded
        machine past the clients' read timeout (ConnectionLoss everywhere). Bounded transactions let the
        heartbeats through between them.

        If a transaction fails after the first one was applied (or perhaps was), ``leftovers`` (the roots of the
        nodes of ``creates``) are deleted, unless the first node of ``visible`` exists (the creation succeeded after
        all), and the error is raised."""
        chunks = [creates[i:i + MAX_TRANSACTION_OPS] for i in range(0, len(creates), MAX_TRANSACTION_OPS)]
        if chunks and len(chunks[-1]) + len(visible) <= MAX_TRANSACTION_OPS:
            chunks[-1] = chunks[-1] + visible
        else:
            chunks += [visible[i:i + MAX_TRANSACTION_OPS] for i in range(0, len(visible), MAX_TRANSACTION_OPS)]
        done = 0
        try:
            for chunk in chunks:
                self._commit_creates(chunk, what)
                done += 1
        except FlussError as e:
            # nothing to undo when the first transaction was refused (its nodes are not ours)
            if done or e.error_code == ErrorCode.NETWORK_EXCEPTION:
                self._remove_leftovers(visible[0][0], leftovers, what)
            raise

    def _commit_creates(self, chunk: list[tuple[str, bytes]], what: str) -> None:
        """Commits one transaction creating ``chunk``. When its outcome is unknown (the connection dropped while it
        was in flight), waits for the session to come back and looks at its last node: a transaction is all or
        nothing, so that node tells whether it was applied; if not, it is sent again."""
        deadline = time.monotonic() + self._session_timeout_s * 2
        while True:
            tx = self._zk.transaction()
            for path, data in chunk:
                tx.create(path, data)
            try:
                _commit(tx, what)
                return
            except FlussError as e:
                if not isinstance(e.__cause__, ConnectionLoss | OperationTimeoutError):
                    raise
                log.warning("%s: the connection to ZooKeeper dropped during a transaction of %d nodes; checking "
                            "whether it was applied", what, len(chunk))
            if self._applied(chunk[-1][0], deadline):
                return
            if time.monotonic() > deadline:
                raise FlussError(f"Cannot {what}: ZooKeeper did not answer within {self._session_timeout_s * 2:.0f}s"
                                 "; retry", ErrorCode.NETWORK_EXCEPTION)

    def _applied(self, path: str, deadline: float) -> bool:
        """Whether ``path`` exists, asked once the connection is back (False if it does not come back by
        ``deadline``)."""
        while time.monotonic() < deadline:
            try:
                self._zk.sync(path)  # a server behind the leader catches up first
                return self._zk.exists(path) is not None
            except (ConnectionLoss, OperationTimeoutError, SessionExpiredError):
                time.sleep(0.1)
        return False

    def _remove_leftovers(self, visible_path: str, leftovers: list[str], what: str) -> None:
        """After a failed creation: deletes the nodes written before the failure (best effort; the paths carry
        ids that are never allocated again, so what stays is garbage nobody reads, never a conflict)."""
        try:
            if self._zk.exists(visible_path) is not None:
                return  # the visible nodes exist: their transaction was applied, nothing to undo
            self._delete_trees(leftovers)
        except KazooException as e:
            log.warning("%s failed and its partial nodes could not be removed (%s): %s", what, type(e).__name__,
                        ", ".join(leftovers))

    def delete_partition(self, db: str, table: str, name: str, table_id: int, partition_id: int) -> None:
        try:
            self._zk.delete(paths.partition(db, table, name))
        except NoNodeError:
            pass
        self.delete_assignment(table_id, partition_id)

    # ------------------------------------------------------------ assignments and leaders

    def get_assignment(self, table_id: int, partition_id: int) -> Assignment | None:
        try:
            data, _ = self._zk.get(paths.bucket_root(table_id, partition_id))
        except NoNodeError:
            return None
        return decode(Assignment, data)

    def start_reassignments(self, assignment: Assignment, partition_id: int,
                            records: list[ReassignmentRecord]) -> None:
        """One transaction: the widened assignment of a table (or partition) and the reassignment records."""
        tx = self._zk.transaction()
        tx.set_data(paths.bucket_root(assignment.table_id, partition_id), encode(assignment))
        for r in records:
            tx.create(paths.reassignment(r.table_id, r.partition_id, r.bucket), encode(r))
        _commit(tx, f"start reassigning buckets {[r.bucket for r in records]} of table {assignment.table_id}")

    def finish_reassignment(self, assignment: Assignment, record: ReassignmentRecord) -> None:
        """One transaction: the final assignment (the bucket's target replicas) and the record's deletion."""
        tx = self._zk.transaction()
        tx.set_data(paths.bucket_root(assignment.table_id, record.partition_id), encode(assignment))
        tx.delete(paths.reassignment(record.table_id, record.partition_id, record.bucket))
        _commit(tx, f"finish reassigning bucket {record.bucket} of table {record.table_id}")

    def update_reassignment(self, record: ReassignmentRecord) -> None:
        """A move's new target (a cancelled move goes back to its original replicas)."""
        self._zk.set(paths.reassignment(record.table_id, record.partition_id, record.bucket), encode(record))

    def list_reassignments(self) -> list[ReassignmentRecord]:
        out = []
        for child in sorted(self._zk.get_children(paths.REASSIGNMENTS)):
            try:
                data, _ = self._zk.get(f"{paths.REASSIGNMENTS}/{child}")
            except NoNodeError:
                continue
            out.append(decode(ReassignmentRecord, data))
        return out

    def delete_reassignment(self, table_id: int, partition_id: int, bucket: int) -> None:
        try:
            self._zk.delete(paths.reassignment(table_id, partition_id, bucket))
        except NoNodeError:
            pass

    def get_server_tags(self) -> dict[int, str]:
        """Tablet server id -> tag name (``/server_tags``; empty when no server is tagged)."""
        try:
            data, _ = self._zk.get(paths.SERVER_TAGS)
        except NoNodeError:
            return {}
        return {int(sid): tag for sid, tag in loads(data).get("tags", {}).items()}

    def set_server_tags(self, tags: dict[int, str]) -> None:
        data = dumps({"tags": {str(sid): tag for sid, tag in sorted(tags.items())}})
        try:
            self._zk.set(paths.SERVER_TAGS, data)
        except NoNodeError:
            self._zk.create(paths.SERVER_TAGS, data, makepath=True)

    def get_cluster_config(self) -> tuple[dict[str, str], int]:
        """The dynamic server options (``/cluster_config``) and the node's data version (-1: no node yet)."""
        try:
            data, stat = self._zk.get(paths.CLUSTER_CONFIG)
        except NoNodeError:
            return {}, -1
        return _config_map(data), stat.version

    def set_cluster_config(self, configs: dict[str, str], expected_version: int) -> bool:
        """Replaces the dynamic server options if the node is still at ``expected_version`` (-1: not created yet);
        False (nothing written) when another writer came first."""
        data = dumps({"configs": dict(sorted(configs.items()))})
        try:
            if expected_version < 0:
                self._zk.create(paths.CLUSTER_CONFIG, data, makepath=True)
            else:
                self._zk.set(paths.CLUSTER_CONFIG, data, version=expected_version)
        except (BadVersionError, NodeExistsError):
            return False
        return True

    def watch_cluster_config(self, callback: Callable[[dict[str, str]], None]) -> None:
        """Calls ``callback(configs)`` now and after every change of ``/cluster_config`` (kazoo's thread)."""
        self._zk.DataWatch(paths.CLUSTER_CONFIG, lambda data, _stat: callback(_config_map(data)))

    def get_rebalance(self) -> bytes | None:
        """The most recent rebalance's record (``/rebalance``, see coordinator/rebalance.py), None when none."""
        try:
            data, _ = self._zk.get(paths.REBALANCE)
        except NoNodeError:
            return None
        return data

    def set_rebalance(self, data: bytes) -> None:
        try:
            self._zk.set(paths.REBALANCE, data)
        except NoNodeError:
            self._zk.create(paths.REBALANCE, data, makepath=True)

    def delete_assignment(self, table_id: int, partition_id: int) -> None:
        self._delete_tree(paths.bucket_root(table_id, partition_id))

    def _delete_tree(self, root: str) -> None:
        self._delete_trees([root])

    def _delete_trees(self, roots: list[str]) -> None:
        """Deletes ``roots`` and everything below them: the nodes are listed level by level (pipelined reads), then
        deleted deepest first in transactions of at most ``MAX_TRANSACTION_OPS`` nodes (one at a time, the 4,000
        nodes of a table of 1,000 partitions took 8,000 round trips). A transaction that fails (a node that is gone
        or got a child meanwhile) has its nodes deleted one by one instead."""
        levels, current = [], list(roots)
        while current:
            pending = [(path, self._zk.get_children_async(path)) for path in current]
            present, current = [], []
            for path, result in pending:
                try:
                    current += [f"{path}/{child}" for child in result.get()]
                    present.append(path)
                except NoNodeError:  # gone already (e.g. a table that has no assignment of its own)
                    continue
            levels.append(present)
        ordered = [path for level in reversed(levels) for path in level]
        for start in range(0, len(ordered), MAX_TRANSACTION_OPS):
            chunk = ordered[start:start + MAX_TRANSACTION_OPS]
            tx = self._zk.transaction()
            for path in chunk:
                tx.delete(path)
            if not any(isinstance(r, Exception) for r in tx.commit()):
                continue
            for path in chunk:
                try:
                    self._zk.delete(path, recursive=True)
                except (NoNodeError, NotEmptyError):
                    pass

    def list_table_assignment_ids(self) -> list[int]:
        return [int(c) for c in self._zk.get_children(paths.TABLE_ASSIGNMENTS)]

    def list_partition_assignment_ids(self) -> list[int]:
        return [int(c) for c in self._zk.get_children(paths.PARTITION_ASSIGNMENTS)]

    def get_leader_and_isr(self, table_id: int, partition_id: int, bucket: int) -> tuple[LeaderAndIsr, int] | None:
        """The bucket's leader/ISR and the znode version (for conditional updates)."""
        try:
            data, stat = self._zk.get(paths.leader_isr(table_id, partition_id, bucket))
        except NoNodeError:
            return None
        return decode(LeaderAndIsr, data), stat.version

    def get_many(self, paths_: list[str]) -> list[bytes | None]:
        """The data of many znodes with pipelined reads (None for a missing node)."""
        pending = [self._zk.get_async(p) for p in paths_]
        out: list[bytes | None] = []
        for result in pending:
            try:
                out.append(result.get()[0])
            except NoNodeError:
                out.append(None)
        return out

    def get_children_many(self, paths_: list[str]) -> list[list[str] | None]:
        """The children of many znodes with pipelined reads (None for a missing node)."""
        pending = [self._zk.get_children_async(p) for p in paths_]
        out: list[list[str] | None] = []
        for result in pending:
            try:
                out.append(result.get())
            except NoNodeError:
                out.append(None)
        return out

    def without_remote_state(self, buckets: list[tuple[int, int, int]]) -> list[bool]:
        """For each ``(table_id, partition_id, bucket)``: True when ZooKeeper holds neither a committed remote log
        manifest nor a KV snapshot for it (its bucket node has no such child); pipelined reads."""
        committed = {paths.REMOTE_LOG_MANIFEST_NODE, paths.KV_SNAPSHOT_NODE}
        children = self.get_children_many([paths.bucket_dir(t, p, b) for t, p, b in buckets])
        return [c is not None and not committed.intersection(c) for c in children]

    def get_leaders_and_isr(self, buckets: list[tuple[int, int, int]]) -> list[LeaderAndIsr | None]:
        """The leader/ISR of many ``(table_id, partition_id, bucket)`` at once."""
        raw = self.get_many([paths.leader_isr(t, p, b) for t, p, b in buckets])
        return [None if d is None else decode(LeaderAndIsr, d) for d in raw]

    def get_assignments(self, keys: list[tuple[int, int]]) -> list[Assignment | None]:
        """The replica assignments of many ``(table_id, partition_id)`` at once."""
        raw = self.get_many([paths.bucket_root(t, p) for t, p in keys])
        return [None if d is None else decode(Assignment, d) for d in raw]

    def set_lake_snapshot(self, snapshot: LakeSnapshotRecord) -> None:
        """Stores a table's latest lake snapshot."""
        path = paths.lake_snapshot(snapshot.table_id)
        try:
            self._zk.set(path, encode(snapshot))
        except NoNodeError:
            self._zk.create(path, encode(snapshot), makepath=True)

    def get_lake_snapshot(self, table_id: int) -> LakeSnapshotRecord | None:
        try:
            data, _ = self._zk.get(paths.lake_snapshot(table_id))
        except NoNodeError:
            return None
        return decode(LakeSnapshotRecord, data)

    def set_kv_snapshot(self, table_id: int, partition_id: int, bucket: int, record: KvSnapshotRecord) -> None:
        path = paths.kv_snapshot(table_id, partition_id, bucket)
        try:
            self._zk.set(path, encode(record))
        except NoNodeError:
            self._zk.create(path, encode(record))

    def get_kv_snapshot(self, table_id: int, partition_id: int, bucket: int) -> KvSnapshotRecord | None:
        try:
            data, _ = self._zk.get(paths.kv_snapshot(table_id, partition_id, bucket))
        except NoNodeError:
            return None
        return decode(KvSnapshotRecord, data)

    def set_remote_log_manifest(self, table_id: int, partition_id: int, bucket: int,
                                record: RemoteLogManifestRecord) -> None:
        path = paths.remote_log_manifest(table_id, partition_id, bucket)
        try:
            self._zk.set(path, encode(record))
        except NoNodeError:
            self._zk.create(path, encode(record))

    def get_remote_log_manifest(self, table_id: int, partition_id: int, bucket: int) -> RemoteLogManifestRecord | None:
        try:
            data, _ = self._zk.get(paths.remote_log_manifest(table_id, partition_id, bucket))
        except NoNodeError:
            return None
        return decode(RemoteLogManifestRecord, data)

    def set_leader_and_isr(self, table_id: int, partition_id: int, bucket: int, value: LeaderAndIsr,
                           expected_version: int = -1) -> int:
        """Writes a bucket's leader/ISR if its version still matches; returns the new version."""
        stat = self._zk.set(paths.leader_isr(table_id, partition_id, bucket), encode(value), version=expected_version)
        return stat.version


def _assignment_creates(root: str, table_id: int, partition_id: int, assignment: Assignment,
                        leaders: dict[int, LeaderAndIsr]) -> list[tuple[str, bytes]]:
    """The nodes of an assignment (parents first): its root, ``buckets``, and each bucket's node and leader/ISR."""
    out = [(root, encode(assignment)), (f"{root}/buckets", b"")]
    for bucket in sorted(assignment.buckets):
        out.append((paths.bucket_dir(table_id, partition_id, bucket), b""))
        out.append((paths.leader_isr(table_id, partition_id, bucket), encode(leaders[bucket])))
    return out


def _config_map(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    configs = loads(data).get("configs", {})
    return {str(k): str(v) for k, v in configs.items()} if isinstance(configs, dict) else {}


def _commit(tx, what: str) -> None:
    try:
        results = tx.commit()
    except KazooException as e:
        raise FlussError(f"Cannot {what}: ZooKeeper refused the request ({type(e).__name__})",
                         ErrorCode.UNKNOWN_SERVER_ERROR) from e
    errors = [r for r in results if isinstance(r, Exception)]
    if errors:
        first = next((e for e in errors if not type(e).__name__ == "RolledBackError"), errors[0])
        if isinstance(first, NodeExistsError):
            raise FlussError(f"Cannot {what}: it already exists", ErrorCode.UNKNOWN_SERVER_ERROR)
        raise FlussError(f"Cannot {what}: ZooKeeper transaction failed ({type(first).__name__})",
                         ErrorCode.UNKNOWN_SERVER_ERROR)
