"""The gateway's clients: one Fluss connection per configured cluster, and the long-lived objects built on it.

Nothing here is per caller or per session. What is kept is what any client keeps to be fast: the connection,
table metadata for ``metadata_ttl_s``, one writer per (table, operation shape), one lookuper per (table, lookup
columns), and a pool of idle log scanners per (table, projection) that a scan borrows, subscribes from the
offsets the request gives, reads, unsubscribes and gives back. A request therefore depends on nothing an
earlier request left behind, and any gateway instance can serve any request.

Everything goes through the Python client's public API (``FlussConnection``, ``get_admin()``,
``get_table()``, ``new_append/new_upsert/new_lookup/new_scan``); the one exception, the exactly-once write path
of requests with an ``Idempotency-Key``, lives in ``fluss.gateway.exactly_once`` and says why.

``get(cluster, principal)`` picks the clients of a request: the service connection for :data:`SERVICE`, else the
clients of that principal (a connection authenticated with its SASL/PLAIN credentials, see
``fluss.gateway.principal``), kept in a bounded least-recently-used pool (:data:`MAX_PRINCIPAL_CLIENTS`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import fluss
from fluss.errors import ErrorCode, FlussError
from fluss.gateway.config import GatewayConfig
from fluss.gateway.errors import CLUSTER_NOT_FOUND, GatewayError, from_fluss
from fluss.gateway.principal import Principal

log = logging.getLogger(__name__)

#: How long the gateway waits for a cluster when it first connects (the client's default is 2 minutes).
CONNECT_TIMEOUT = "10s"
#: Client sets of callers' principals kept per gateway (the least recently used one is closed beyond this).
MAX_PRINCIPAL_CLIENTS = 32
#: Idle scanners kept per (table, projection).
MAX_IDLE_SCANNERS = 8
#: Table-level errors after which cached objects of that table are dropped (the table may have been recreated).
_STALE_TABLE_CODES = frozenset({ErrorCode.TABLE_NOT_EXIST, ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
                                ErrorCode.SCHEMA_NOT_EXIST})


@dataclass
class CachedTable:
    info: fluss.TableInfo
    table: fluss.FlussTable
    loaded_at: float
    objects: dict[tuple, Any] = field(default_factory=dict)  # writers and lookupers by shape
    idle_scanners: dict[tuple, deque] = field(default_factory=dict)


class ClusterClients:
    """The connection and cached client objects of one cluster."""

    def __init__(self, cluster_id: str, bootstrap_servers: str, options: dict[str, str], ttl_s: float) -> None:
        self.cluster_id = cluster_id
        self._config = fluss.Config({"connect-timeout": CONNECT_TIMEOUT, **options,
                                     "bootstrap.servers": bootstrap_servers})
        self._ttl_s = ttl_s
        self._conn: fluss.FlussConnection | None = None
        self._lock = asyncio.Lock()
        self._tables: dict[fluss.TablePath, CachedTable] = {}
        self._table_locks: dict[fluss.TablePath, asyncio.Lock] = {}

    async def connection(self) -> fluss.FlussConnection:
        if self._conn is not None:
            return self._conn
        async with self._lock:
            if self._conn is None:
                try:
                    self._conn = await fluss.FlussConnection.create(self._config)
                except FlussError as e:
                    raise from_fluss(e) from None
            return self._conn

    async def admin(self) -> fluss.FlussAdmin:
        return (await self.connection()).get_admin()

    # ------------------------------------------------------------ tables

    async def table(self, path: fluss.TablePath, fresh: bool = False) -> CachedTable:
        """The table's metadata and client objects (metadata at most ``metadata_ttl_s`` old, or fresh)."""
        cached = self._tables.get(path)
        if cached is not None and not fresh and time.monotonic() - cached.loaded_at < self._ttl_s:
            return cached
        lock = self._table_locks.setdefault(path, asyncio.Lock())
        async with lock:
            cached = self._tables.get(path)
            if cached is not None and not fresh and time.monotonic() - cached.loaded_at < self._ttl_s:
                return cached
            conn = await self.connection()
            table = await conn.get_table(path)
            info = table.get_table_info()
            if cached is not None and (cached.info.table_id, cached.info.schema_id) == (info.table_id, info.schema_id):
                cached.loaded_at = time.monotonic()
                return cached
            if cached is not None:
                await self._close_objects(cached)
            fresh_entry = CachedTable(info, table, time.monotonic())
            self._tables[path] = fresh_entry
            return fresh_entry

    async def forget(self, path: fluss.TablePath) -> None:
        """Drops what is cached for a table (after DDL, or an error saying it changed)."""
        cached = self._tables.pop(path, None)
        if cached is not None:
            await self._close_objects(cached)

    async def on_error(self, path: fluss.TablePath, err: FlussError) -> None:
        if err.error_code in _STALE_TABLE_CODES:
            await self.forget(path)

    async def shared(self, entry: CachedTable, shape: tuple, build: Callable[[], Any]) -> Any:
        """The table's object of this shape (a writer, a lookuper), built once off the event loop."""
        obj = entry.objects.get(shape)
        if obj is None:
            obj = await asyncio.to_thread(build)
            existing = entry.objects.setdefault(shape, obj)
            if existing is not obj:
                await _close(obj)
                obj = existing
        return obj

    async def with_scanner(self, entry: CachedTable, projection: tuple[int, ...] | None,
                           use: Callable[[fluss.LogScanner], Awaitable[Any]]) -> Any:
        """Runs ``use`` with an idle batch log scanner of this projection (no bucket subscribed), then returns it
        to the pool with every subscription dropped."""
        idle = entry.idle_scanners.setdefault((projection,), deque())
        if idle:
            scanner = idle.pop()
        else:
            scan = entry.table.new_scan()
            if projection is not None:
                scan = scan.project(list(projection))
            # a primary-key table's changelog comes as Arrow batches with change types (beyond the official API,
            # whose record-batch scanner refuses primary-key tables)
            scanner = scan.create_changelog_batch_scanner() if entry.info.has_primary_key() \
                else await scan.create_record_batch_log_scanner()
        clean = False
        try:
            result = await use(scanner)
            clean = True
            return result
        finally:
            if clean and len(idle) < MAX_IDLE_SCANNERS and self._tables.get(entry.info.table_path) is entry:
                idle.append(scanner)
            else:
                await _close(scanner)

    async def _close_objects(self, entry: CachedTable) -> None:
        for obj in list(entry.objects.values()):
            await _close(obj)
        entry.objects.clear()
        for pool in entry.idle_scanners.values():
            while pool:
                await _close(pool.pop())

    async def close(self) -> None:
        for path in list(self._tables):
            await self.forget(path)
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


async def _close(obj: Any) -> None:
    try:
        await obj.aclose()
    except Exception:  # noqa: BLE001 - closing a client object must not fail a request
        log.debug("closing %r failed", obj, exc_info=True)


class ClusterRegistry:
    """All configured clusters of a gateway, by id."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self._clusters = {cid: ClusterClients(cid, servers, config.client_options, config.metadata_ttl_s)
                          for cid, servers in config.clusters.items()}
        self._by_principal: OrderedDict[tuple[str, Principal], ClusterClients] = OrderedDict()

    def ids(self) -> list[str]:
        return sorted(self._clusters)

    def get(self, cluster_id: str, principal: Principal) -> ClusterClients:
        """The clients of a cluster for a principal: the service connection (the only principal until the
        cluster authenticates; then one connection per principal, see ``fluss.gateway.principal``)."""
        clients = self._clusters.get(cluster_id)
        if clients is None:
            raise GatewayError(CLUSTER_NOT_FOUND, f"cluster '{cluster_id}' is not configured in this gateway "
                               f"(configured: {', '.join(self.ids())})")
        if principal.is_service:
            return clients
        key = (cluster_id, principal)
        mine = self._by_principal.get(key)
        if mine is None:
            user, password = principal.credentials
            options = {**self.config.client_options, "client.security.protocol": "SASL",
                       "client.security.sasl.mechanism": "PLAIN", "client.security.sasl.username": user,
                       "client.security.sasl.password": password}
            mine = self._by_principal[key] = ClusterClients(cluster_id, self.config.clusters[cluster_id], options,
                                                            self.config.metadata_ttl_s)
            while len(self._by_principal) > MAX_PRINCIPAL_CLIENTS:
                _, evicted = self._by_principal.popitem(last=False)
                asyncio.get_running_loop().create_task(evicted.close())
        self._by_principal.move_to_end(key)
        return mine

    async def close(self) -> None:
        for clients in [*self._clusters.values(), *self._by_principal.values()]:
            await clients.close()
        self._by_principal.clear()
