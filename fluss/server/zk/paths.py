"""The znode layout: the only module that builds ZooKeeper paths.

All paths are relative to ``zookeeper.path.root`` (default ``/fluss``); ``docs/zookeeper-layout.md``
describes each node and the JSON stored in it.

    /coordinators/active                          ephemeral: the active coordinator {id, host, port, epoch}
    /coordinators/election/                       election candidates (kazoo Election recipe)
    /coordinators/epoch                           persistent: the latest coordinator epoch (int)
    /tabletservers/ids/{id}                       ephemeral: a live tablet server {host, port, register_time}
    /metadata/databases/{db}                      a database {comment, custom_properties, created_time, ...}
    /metadata/databases/{db}/tables/{t}           a table registration {table_id, schema_id, descriptor ...}
    /metadata/databases/{db}/tables/{t}/schemas/{schema_id}   a schema version
    /metadata/databases/{db}/tables/{t}/partitions/{name}     {partition_id, spec}
    /metadata/table_id_seq, /metadata/partition_id_seq, /metadata/writer_id_seq   id counters (versioned CAS)
    /tabletservers/tables/{table_id}              replica assignment {bucket: [server ids]}
    /tabletservers/tables/{table_id}/buckets/{b}/leader_isr     {leader, leader_epoch, isr, coordinator_epoch, bucket_epoch}
    /tabletservers/tables/{table_id}/buckets/{b}/kv_snapshot    the latest completed KV snapshot of the bucket
    /tabletservers/tables/{table_id}/buckets/{b}/remote_log_manifest   the committed remote (tiered) log manifest
    /tabletservers/tables/{table_id}/lake_snapshot   the latest lake snapshot: {snapshot_id, buckets: [...]}
    /tabletservers/partitions/{partition_id}      replica assignment of a partition {table_id, buckets}
    /tabletservers/partitions/{partition_id}/buckets/{b}/leader_isr
    /reassignments/{table_id}_{partition_id}_{b}  a bucket being reassigned {original, target} (partition_id -1: none)
    /server_tags                                  tags of tablet servers {tags: {id: PERMANENT_OFFLINE|TEMPORARY_OFFLINE}}
    /cluster_config                               dynamic server options {configs: {key: value}} (alter_cluster_configs)
    /rebalance                                    the most recent rebalance {rebalance_id, goals, status, buckets: [...]}
    /acls/{CLUSTER|DATABASE|TABLE}/{name}        the ACLs of one resource {acls: [{principal, operation, ...}]}
    /acl_changes                                  its data version changes with every ACL change (servers watch it)
"""

from __future__ import annotations

COORDINATORS = "/coordinators"
ACTIVE_COORDINATOR = "/coordinators/active"
COORDINATOR_ELECTION = "/coordinators/election"
COORDINATOR_EPOCH = "/coordinators/epoch"
TABLET_SERVER_IDS = "/tabletservers/ids"
DATABASES = "/metadata/databases"
TABLE_ID_SEQ = "/metadata/table_id_seq"
PARTITION_ID_SEQ = "/metadata/partition_id_seq"
WRITER_ID_SEQ = "/metadata/writer_id_seq"
TABLE_ASSIGNMENTS = "/tabletservers/tables"
PARTITION_ASSIGNMENTS = "/tabletservers/partitions"
ACLS = "/acls"
REASSIGNMENTS = "/reassignments"
SERVER_TAGS = "/server_tags"
CLUSTER_CONFIG = "/cluster_config"
REBALANCE = "/rebalance"
ACL_CHANGES = "/acl_changes"


def tablet_server(server_id: int) -> str:
    return f"{TABLET_SERVER_IDS}/{server_id}"


def database(db: str) -> str:
    return f"{DATABASES}/{db}"


def tables(db: str) -> str:
    return f"{database(db)}/tables"


def table(db: str, table_name: str) -> str:
    return f"{tables(db)}/{table_name}"


def schemas(db: str, table_name: str) -> str:
    return f"{table(db, table_name)}/schemas"


def schema(db: str, table_name: str, schema_id: int) -> str:
    return f"{schemas(db, table_name)}/{schema_id}"


def partitions(db: str, table_name: str) -> str:
    return f"{table(db, table_name)}/partitions"


def partition(db: str, table_name: str, partition_name: str) -> str:
    return f"{partitions(db, table_name)}/{partition_name}"


def table_assignment(table_id: int) -> str:
    return f"{TABLE_ASSIGNMENTS}/{table_id}"


def partition_assignment(partition_id: int) -> str:
    return f"{PARTITION_ASSIGNMENTS}/{partition_id}"


def bucket_root(table_id: int, partition_id: int) -> str:
    """The assignment node that owns a bucket's ``buckets/`` children."""
    return partition_assignment(partition_id) if partition_id >= 0 else table_assignment(table_id)


def leader_isr(table_id: int, partition_id: int, bucket: int) -> str:
    return f"{bucket_root(table_id, partition_id)}/buckets/{bucket}/leader_isr"


def bucket_dir(table_id: int, partition_id: int, bucket: int) -> str:
    return f"{bucket_root(table_id, partition_id)}/buckets/{bucket}"


def lake_snapshot(table_id: int) -> str:
    return f"{table_assignment(table_id)}/lake_snapshot"


KV_SNAPSHOT_NODE = "kv_snapshot"
REMOTE_LOG_MANIFEST_NODE = "remote_log_manifest"


def kv_snapshot(table_id: int, partition_id: int, bucket: int) -> str:
    return f"{bucket_dir(table_id, partition_id, bucket)}/{KV_SNAPSHOT_NODE}"


def acl_type(resource_type: str) -> str:
    return f"{ACLS}/{resource_type}"


def acl(resource_type: str, name: str) -> str:
    return f"{acl_type(resource_type)}/{name}"


def remote_log_manifest(table_id: int, partition_id: int, bucket: int) -> str:
    return f"{bucket_dir(table_id, partition_id, bucket)}/{REMOTE_LOG_MANIFEST_NODE}"


def reassignment(table_id: int, partition_id: int, bucket: int) -> str:
    return f"{REASSIGNMENTS}/{table_id}_{partition_id}_{bucket}"
