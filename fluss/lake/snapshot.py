"""Lake snapshots as the coordinator records them, through the admin API of the client.

A :class:`~fluss.metadata.LakeSnapshot` says "the lake (Paimon snapshot ``snapshot_id``) holds every record of
bucket ``b`` below offset ``table_buckets_offset[b]``". The coordinator stores one per table
(``CommitLakeTableSnapshot`` replaces the previous one, ignoring a snapshot id that is not newer), so a report always
carries every bucket ever tiered, not only those changed.

The lake package uses only the client's public API: these functions are the admin's ``get_latest_lake_snapshot``,
``list_lake_tables`` and ``commit_lake_snapshot``, named for the lake's callers.
"""

from __future__ import annotations

from fluss.metadata import LakeSnapshot, TableInfo, TablePath

__all__ = ["LakeSnapshot", "commit_lake_snapshot", "get_latest_lake_snapshot", "list_lake_tables"]


async def get_latest_lake_snapshot(conn, table_path: TablePath) -> LakeSnapshot:
    """The table's latest lake snapshot; raises ``FlussError(LAKE_SNAPSHOT_NOT_EXIST)`` before the first tiering."""
    return await conn.get_admin().get_latest_lake_snapshot(table_path)


async def list_lake_tables(conn) -> list[tuple[TableInfo, LakeSnapshot | None]]:
    """Every lake-enabled table with its latest lake snapshot (None before the first tiering)."""
    return await conn.get_admin().list_lake_tables()


async def commit_lake_snapshot(conn, snapshot: LakeSnapshot) -> None:
    """Reports a lake snapshot to the coordinator (idempotent: an id not newer than the stored one is ignored)."""
    await conn.get_admin().commit_lake_snapshot(snapshot)
