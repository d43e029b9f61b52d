"""How a tablet server's RemoteLogManager reaches the coordinator: CommitRemoteLogManifest and
GetRemoteLogManifest over the coordinator channel (see ``fluss/server/log/remote/manager.py``). Commits carry the
server's registration epoch, read at each call (it changes when the server registers again after a ZooKeeper
session expiry), which the coordinator checks as it does for every request from a tablet server."""

from __future__ import annotations

from collections.abc import Callable

from fluss.metadata import TableBucket
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.log.remote.manager import CommittedManifest
from fluss.server.log.remote.manifest import RemoteLogManifest
from fluss.server.tablet.coordinator_channel import CoordinatorChannel


class CoordinatorManifestCommitter:
    def __init__(self, coordinator: CoordinatorChannel, server_id: int, server_epoch: Callable[[], int]) -> None:
        self._coordinator = coordinator
        self._server_id = server_id
        self._server_epoch = server_epoch

    async def commit(self, bucket: TableBucket, leader_epoch: int, path: str, previous_path: str,
                     manifest: RemoteLogManifest) -> None:
        await self._coordinator.call("CommitRemoteLogManifest", pb.CommitRemoteLogManifestRequest(
            server_id=self._server_id, server_epoch=self._server_epoch(), leader_epoch=leader_epoch, previous_manifest_path=previous_path,
            manifest=pb.RemoteLogManifestPb(
                table_id=bucket.table_id, partition_id=bucket.partition_id_or_none_value, bucket_id=bucket.bucket_id,
                remote_log_manifest_path=path, remote_log_start_offset=manifest.start_offset,
                remote_log_end_offset=manifest.end_offset, remote_log_size=manifest.size_in_bytes,
                segment_count=len(manifest.segments))))

    async def committed(self, bucket: TableBucket) -> CommittedManifest | None:
        resp = await self._coordinator.call("GetRemoteLogManifest", pb.GetRemoteLogManifestRequest(
            table_id=bucket.table_id, partition_id=bucket.partition_id_or_none_value, bucket_id=bucket.bucket_id))
        if not resp.found:
            return None
        m = resp.manifest
        return CommittedManifest(m.remote_log_manifest_path, m.remote_log_start_offset, m.remote_log_end_offset)
