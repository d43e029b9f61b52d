"""The streamhouse lake: lake-enabled Fluss tables tiered into Apache Paimon, and Union Read.

Pieces, one module each:

* :mod:`fluss.lake.config` - the option keys (``datalake.format``, ``datalake.paimon.warehouse``,
  ``table.datalake.enabled``, ``table.datalake.freshness``) and how the warehouse location is resolved.
* :mod:`fluss.lake.paimon` - the Paimon side: the Fluss→Paimon table mapping, creating the lake table when a
  lake-enabled Fluss table is created, writing a bucket's records with the bucket given (no re-hashing), and the
  idempotent commit that records the covered Fluss offsets in the Paimon snapshot properties.
* :mod:`fluss.lake.snapshot` - :class:`LakeSnapshot` (what the coordinator records) and
  :func:`get_latest_lake_snapshot`.
* :mod:`fluss.lake.partitions` - the ``(partition_id, bucket)`` keys of a table (its partitions now) and their
  log offsets.
* :mod:`fluss.lake.log_range` - reading exactly ``[start, end)`` of each bucket key's log.
* :mod:`fluss.lake.tiering` - the tiering core: one round of "read the Fluss log range, write Paimon, commit,
  report" for one table (partitioned or not). The PyFlink job in ``tiering_job/`` runs it.
* :mod:`fluss.lake.union_read` - ``await union_read(conn, path, partitions=None)``: lake snapshot + Fluss log
  after it.
* :mod:`fluss.lake.status` - ``fluss tiering status``: lake snapshot, freshness and tier lag per bucket.

See ``docs/lakehouse.md`` for the design and the exactly-once argument.
"""
