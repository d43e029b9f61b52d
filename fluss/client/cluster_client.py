"""The client's view of the cluster: which coordinator is active, the servers, and where each bucket leads.

Admin calls go to the active coordinator; the bootstrap list is tried in turn when a coordinator is down or
answers that it is not active (coordinator failover), for up to the request timeout. Until some server of the
bootstrap list has answered once, the client does not know there is a cluster at all: when every address
refuses the connection or does not resolve, calls give up after ``connect-timeout`` (a few seconds), with one
line naming each address and why (connection refused, unknown host); an address that accepts connections but
does not answer gets the request timeout (a server still starting). Table and partition metadata is cached and refreshed on demand
(e.g. after a NOT_LEADER_OR_FOLLOWER error).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import grpc

from fluss.client.config import Config
from fluss.client.metrics import ClientMetrics, metrics_enabled
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import ServerNode, TableBucket, TableInfo, TablePath
from fluss.rpc.addresses import parse_addresses, unreachable_reason
from fluss.rpc.channels import ChannelFactory, ChannelPool
from fluss.rpc.errors import raise_for_error
from fluss.rpc.fetch_wire import FETCH_LOG_METHOD, split_fetch_response
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.sasl import SaslPlainCredentials
from fluss.rpc.tls import tls_failure

_FAILOVER_CODES = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}


@dataclass
class TableMetadata:
    info: TableInfo
    leaders: dict[TableBucket, int] = field(default_factory=dict)  # bucket -> leader server id (-1 none)
    partitions: dict[str, int] = field(default_factory=dict)  # partition name -> id
    # partition id -> its own bucket count (fixed at its creation; ALTER TABLE SET bucket.num changes later ones)
    partition_buckets: dict[int, int] = field(default_factory=dict)

    def bucket_count(self, partition_id: int | None) -> int:
        """The buckets of a partition (or of the table when ``partition_id`` is None): rows are routed, looked up
        and scanned by this count. A partition whose metadata was not fetched yet is the caller's to fetch."""
        if partition_id is None or partition_id < 0:
            return self.info.num_buckets
        return self.partition_buckets.get(partition_id) or self.info.num_buckets


class ClusterClient:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.connect_timeout_s = config.connect_timeout_ms / 1000
        credentials = config.credentials()
        interceptors = [SaslPlainCredentials(*credentials)] if credentials else []
        self.tls = config.tls()
        self.channels = ChannelPool(ChannelFactory(interceptors, connect_timeout_s=self.connect_timeout_s,
                                                   tls=self.tls))
        self.bootstrap = parse_addresses(config.bootstrap_servers)
        self._reached = False  # some server of the bootstrap list has answered (there is a cluster)
        self._active: str | None = None
        self.servers: dict[int, ServerNode] = {}
        self.tables: dict[TablePath, TableMetadata] = {}
        self.partition_names: dict[int, str] = {}
        self.request_timeout_s = config.request_timeout_ms / 1000
        options = config.to_dict()
        #: the connection's metrics (client.metrics.enabled), None when disabled
        self.metrics: ClientMetrics | None = ClientMetrics(options) if metrics_enabled(options) else None

    # ------------------------------------------------------------ coordinator calls

    async def admin_call(self, method: str, request, timeout_s: float | None = None):
        """Calls an AdminService method on the active coordinator; raises FlussError for an error response,
        and NETWORK_EXCEPTION naming each address and its cause when none can be reached in time.

        An address that is down (or a standby) sends the call to the next. Once a server has answered, an attempt
        may use what is left of ``request-timeout``, so a slow DDL is never sent twice because a short per-attempt
        deadline expired; before that, an attempt waits at most ``connect-timeout``."""
        start = time.monotonic()
        timeout = timeout_s or self.request_timeout_s
        deadline = start + timeout
        # until a server has answered once, addresses that refuse connections or do not resolve fail fast
        fast_deadline = start + min(timeout, self.connect_timeout_s)
        last: Exception | None = None
        unreachable: dict[str, str] = {}
        tls_refused: dict[str, str] = {}  # addresses whose TLS handshake (or lack of one) failed
        while True:
            candidates = ([self._active] if self._active else []) + [a for a in self.bootstrap if a != self._active]
            for address in candidates:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                attempt_s = max(remaining, 1.0) if self._reached else max(0.5, min(self.connect_timeout_s, remaining))
                try:
                    resp = await getattr(self.channels.admin(address), method)(request, timeout=attempt_s)
                except grpc.aio.AioRpcError as e:
                    if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                        raise FlussError(f"{address} answered {method} with UNIMPLEMENTED: it is not a Fluss "
                                         f"coordinator (check bootstrap.servers)", ErrorCode.NETWORK_EXCEPTION) from None
                    if e.code() not in _FAILOVER_CODES:
                        raise FlussError(f"{method} to {address} failed: {e.code().name} {e.details()}",
                                         ErrorCode.NETWORK_EXCEPTION) from None
                    if not isinstance(last, FlussError):  # a standby's answer says more than a timeout
                        last = e
                    tls_why = tls_failure(e.details() or "", self.tls is not None)
                    if tls_why is not None:
                        tls_refused[address] = tls_why
                    unreachable[address] = tls_why or unreachable_reason(address, e, attempt_s)
                    if self._active == address:
                        self._active = None
                    continue
                self._reached = True
                unreachable.pop(address, None)
                if resp.error.code == ErrorCode.INVALID_COORDINATOR_EXCEPTION:
                    last = FlussError(resp.error.message, resp.error.code)
                    if self._active == address:
                        self._active = None
                    continue
                self._active = address
                raise_for_error(resp.error)
                return resp
            if not self._reached and tls_refused and len(tls_refused) == len(self.bootstrap):
                # no retry mends a TLS mismatch or an untrusted certificate: say so at once
                causes = "; ".join(f"{a}: {why}" for a, why in tls_refused.items())
                raise FlussError(f"Cannot connect to the Fluss cluster (bootstrap.servers={','.join(self.bootstrap)})"
                                 f": {causes}", ErrorCode.AUTHENTICATE_EXCEPTION)
            now = time.monotonic()
            definite = (not self._reached and len(unreachable) == len(self.bootstrap)
                        and not any(why.startswith("no answer") for why in unreachable.values()))
            if now >= deadline or (definite and now >= fast_deadline):
                raise self._unreachable_error(unreachable, last, now - start)
            await asyncio.sleep(0.1)

    def _unreachable_error(self, unreachable: dict[str, str], last: Exception | None, waited_s: float) -> FlussError:
        if unreachable and len(unreachable) == len(self.bootstrap):
            causes = "; ".join(f"{a}: {why}" for a, why in unreachable.items())
            what = "Cannot connect to the Fluss cluster" if not self._reached else "No coordinator reachable"
            return FlussError(f"{what} (bootstrap.servers={','.join(self.bootstrap)}) after {waited_s:.1f}s: "
                              f"{causes}", ErrorCode.NETWORK_EXCEPTION)
        detail = last.message if isinstance(last, FlussError) else "no answer"
        return FlussError(f"No active coordinator at {', '.join(self.bootstrap)} after {waited_s:.1f}s ({detail})",
                          ErrorCode.NETWORK_EXCEPTION)

    # ------------------------------------------------------------ metadata

    async def update_metadata(self, table_paths: list[TablePath] = (), partitions: list[tuple[TablePath, str]] = (),
                              partition_ids: list[int] = ()) -> pb.GetMetadataResponse:
        req = pb.GetMetadataRequest(
            table_paths=[p.to_pb() for p in table_paths],
            partitions=[pb.PartitionRefPb(table_path=p.to_pb(), partition_name=n) for p, n in partitions],
            partition_ids=list(partition_ids))
        resp = await self.admin_call("GetMetadata", req)
        self.servers = {n.id: ServerNode.from_pb(n) for n in resp.tablet_servers}
        by_id: dict[int, TableMetadata] = {}
        for t in resp.tables:
            info = TableInfo.from_pb(t.table_info)
            old = self.tables.get(info.table_path)
            meta = TableMetadata(info, partitions=dict(old.partitions) if old and old.info.table_id == info.table_id
                                 else {})
            if old and old.info.table_id == info.table_id:
                meta.leaders = dict(old.leaders)
                meta.partition_buckets = dict(old.partition_buckets)
            for b in t.buckets:
                meta.leaders[TableBucket(info.table_id, b.bucket_id)] = b.leader_id
            self.tables[info.table_path] = meta
        for meta in self.tables.values():
            by_id[meta.info.table_id] = meta
        for p in resp.partitions:
            meta = by_id.get(p.table_id)
            if meta is None:
                continue
            meta.partitions[p.partition_name] = p.partition_id
            if p.bucket_count > 0:
                meta.partition_buckets[p.partition_id] = p.bucket_count
            self.partition_names[p.partition_id] = p.partition_name
            for b in p.buckets:
                meta.leaders[TableBucket(p.table_id, b.bucket_id, p.partition_id)] = b.leader_id
        return resp

    async def table(self, path: TablePath, refresh: bool = False) -> TableMetadata:
        if refresh or path not in self.tables:
            await self.update_metadata([path])
        return self.tables[path]

    async def bucket_count(self, path: TablePath, partition_id: int | None) -> int | None:
        """The buckets of a partition of ``path`` (its own count), fetching its metadata when it is not cached;
        None when the partition does not exist. Of the table itself when ``partition_id`` is None."""
        meta = await self.table(path)
        if partition_id is None or partition_id in meta.partition_buckets:
            return meta.bucket_count(partition_id)
        try:
            await self.update_metadata([path], partition_ids=[partition_id])
        except FlussError as e:
            if e.error_code == ErrorCode.PARTITION_NOT_EXISTS:
                return None
            raise
        meta = self.tables[path]
        return meta.bucket_count(partition_id) if partition_id in self.partition_names else None

    def leader_address(self, meta: TableMetadata, tb: TableBucket) -> str | None:
        leader = meta.leaders.get(tb, -1)
        node = self.servers.get(leader)
        return node.address if node else None

    def tablet_stub(self, address: str):
        return self.channels.tablet(address)

    async def tablet_call(self, address: str, method: str, request, timeout_s: float = 30.0):
        """Calls a TabletService method; a transport failure becomes a retriable NETWORK_EXCEPTION and a
        request-level error of the response a FlussError (per-bucket errors are the caller's to read)."""
        return await self.tablet_result(address, method, self.start_tablet_call(address, method, request, timeout_s))

    def start_tablet_call(self, address: str, method: str, request, timeout_s: float = 30.0) -> grpc.aio.Call:
        """Starts a TabletService call on this loop without awaiting it (gRPC sends it from its own task, so a
        caller that starts it synchronously saves a loop iteration before the request goes out); await its
        result with :meth:`tablet_result`."""
        return getattr(self.channels.tablet(address), method)(request, timeout=timeout_s)

    async def tablet_result(self, address: str, method: str, call: grpc.aio.Call):
        """The response of a call of :meth:`start_tablet_call`, with :meth:`tablet_call`'s error handling."""
        try:
            resp = await call
        except grpc.aio.AioRpcError as e:
            raise FlussError(f"{method} to tablet server {address} failed: {e.code().name}",
                             ErrorCode.NETWORK_EXCEPTION) from None
        raise_for_error(resp.error)
        return resp

    async def fetch_log(self, address: str, request: pb.FetchLogRequest, timeout_s: float
                        ) -> tuple[pb.FetchLogResponse, list[list[memoryview]]]:
        """FetchLog with the records left in the received bytes (``fetch_wire``): the response without them,
        and each bucket's records as a view (``records[t][b]`` for ``tables[t].buckets[b]``)."""
        call = self.channels.channel(address).unary_unary(
            FETCH_LOG_METHOD, request_serializer=pb.FetchLogRequest.SerializeToString, response_deserializer=None)
        try:
            data = await call(request, timeout=timeout_s)
        except grpc.aio.AioRpcError as e:
            raise FlussError(f"FetchLog to tablet server {address} failed: {e.code().name}",
                             ErrorCode.NETWORK_EXCEPTION) from None
        resp, records = split_fetch_response(data)
        raise_for_error(resp.error)
        return resp, records

    async def close(self) -> None:
        await self.channels.close()
        if self.metrics is not None:
            self.metrics.close()
