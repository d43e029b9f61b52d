"""Lake maintenance a tiering round asks for: compaction and snapshot expiry of the lake table.

Two table options (Fluss's keys, both [false]):

* ``table.datalake.auto-compaction`` - after a round committed, the buckets it wrote are compacted with
  Paimon's own compaction (its strategy decides whether a bucket needs it: ``num-sorted-run.compaction-trigger``
  for primary-key tables, ``compaction.min.file-num`` for append tables; tune them as ``paimon.*`` table
  properties). Without it the lake accumulates the small files of frequent rounds.
* ``table.datalake.auto-expire-snapshot`` - after a round committed, old lake snapshots are expired by the lake
  table's retention options (``paimon.snapshot.num-retained.min`` [10], ``.max``, ``paimon.snapshot.time-retained``
  [1h]), except the snapshot the coordinator's lake snapshot names and every later one: Union Read never needs an
  expired snapshot.

The work itself is Java (pypaimon has neither compaction nor expiry): the tiering job's Flink pipeline runs
``org.fluss.py.flink.lake.LakeMaintenance`` (connector jar, Paimon's classes) on the round's result after the
committer reported the new snapshot. :func:`maintenance_request` builds what that step gets; the committer adds
``retain_from`` (the reported snapshot id) once the coordinator has it, so expiry can never remove the snapshot
the coordinator still names. Rounds run without the PyFlink job (``tier_table`` called directly) do no
maintenance.
"""

from __future__ import annotations

from fluss.lake.config import auto_compaction, auto_expire_snapshot
from fluss.metadata import NO_PARTITION, TableInfo

#: Key of the maintenance request in a tiering round's JSON result.
MAINTENANCE = "maintenance"
#: Snapshot id below which expiry may remove snapshots: set by the committer after its report succeeded.
RETAIN_FROM = "retain_from"


def maintenance_request(info: TableInfo, catalog_options: dict[str, str], result) -> dict | None:
    """What the Java maintenance step should do after a round (a ``TieringResult``); None when nothing: the
    round committed nothing or the table asks for no maintenance."""
    compact, expire = auto_compaction(info), auto_expire_snapshot(info)
    if result.snapshot_id is None or not (compact or expire):
        return None
    names = result.to_report.partition_names if result.to_report is not None else {}
    written = sorted(set(result.ranges) | set(result.from_kv))
    buckets = [[None if pid == NO_PARTITION else names.get(pid), bucket] for pid, bucket in written
               if pid == NO_PARTITION or pid in names]
    return {"catalog": dict(catalog_options), "database": info.table_path.database_name,
            "table": info.table_path.table_name, "compact": compact, "expire": expire, "buckets": buckets}


__all__ = ["MAINTENANCE", "RETAIN_FROM", "maintenance_request"]
