"""The REST resources, one module per group: system (health, readiness, clusters), catalog (databases, tables,
partitions, offsets, stats, lake snapshots: metadata and DDL), records (writes) and reads (lookups, scans,
union read)."""
