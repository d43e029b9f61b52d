"""Access control lists: Fluss's model, shared by the client's admin API and the servers' authorizer.

An :class:`AclBinding` says that a :class:`Principal` (``User:alice``) is ALLOWed (or DENYed) an
:class:`OperationType` on a :class:`Resource`, from a host (``*`` = any host). Resources form a hierarchy,
CLUSTER > DATABASE > TABLE: a grant on a database covers its tables, one on the cluster covers everything.
``ALL`` implies every operation; ``READ``, ``WRITE``, ``CREATE``, ``DROP`` and ``ALTER`` each imply ``DESCRIBE``.
A DENY that matches wins over any ALLOW. :class:`AclBindingFilter` selects bindings for ``list_acls`` and
``drop_acls``: an unset field (or ``ANY``) matches everything.

Resource names as the Flink procedures write them: ``cluster``, ``cluster.db1``, ``cluster.db1.orders``
(:meth:`Resource.parse`; ``db1`` and ``db1.orders`` work too).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from fluss.errors import ErrorCode, FlussError
from fluss.rpc.gen import fluss_api_pb2 as pb

CLUSTER_NAME = "fluss-cluster"
WILDCARD = "*"


def _invalid(message: str) -> FlussError:
    return FlussError(message, ErrorCode.INVALID_CONFIG_EXCEPTION)


class ResourceType(Enum):
    ANY = "ANY"  # filters only
    CLUSTER = "CLUSTER"
    DATABASE = "DATABASE"
    TABLE = "TABLE"

    @classmethod
    def parse(cls, text: str) -> ResourceType:
        try:
            return cls[str(text).strip().upper()]
        except KeyError:
            raise _invalid(f"Unknown resource type {text!r} (expected CLUSTER, DATABASE or TABLE)") from None


class OperationType(Enum):
    ANY = "ANY"  # filters only
    ALL = "ALL"
    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DROP = "DROP"
    ALTER = "ALTER"
    DESCRIBE = "DESCRIBE"

    @classmethod
    def parse(cls, text: str) -> OperationType:
        try:
            return cls[str(text).strip().upper()]
        except KeyError:
            raise _invalid(f"Unknown operation {text!r} (expected one of "
                           f"{', '.join(o.name for o in cls)})") from None

    def implied_by(self) -> frozenset[OperationType]:
        """The granted operations that allow this one (itself, ALL, and for DESCRIBE the five that imply it)."""
        return _IMPLIED_BY[self]


_IMPLIED_BY = {op: frozenset({op, OperationType.ALL}) for op in OperationType}
_IMPLIED_BY[OperationType.DESCRIBE] = frozenset({OperationType.DESCRIBE, OperationType.ALL, OperationType.READ,
                                                 OperationType.WRITE, OperationType.CREATE, OperationType.DROP,
                                                 OperationType.ALTER})


class PermissionType(Enum):
    ANY = "ANY"  # filters only
    ALLOW = "ALLOW"
    DENY = "DENY"

    @classmethod
    def parse(cls, text: str) -> PermissionType:
        try:
            return cls[str(text).strip().upper()]
        except KeyError:
            raise _invalid(f"Unknown permission {text!r} (expected ALLOW or DENY)") from None


@dataclass(frozen=True, order=True)
class Principal:
    """``type:name``, e.g. ``User:alice``; ``User:*`` matches every user."""

    type: str
    name: str

    @staticmethod
    def user(name: str) -> Principal:
        return Principal("User", name)

    @staticmethod
    def parse(text: str, what: str = "principal") -> Principal:
        text = str(text).strip()
        kind, sep, name = text.partition(":")
        if not sep:
            kind, name = "User", text
        if not kind.strip() or not name.strip():
            raise _invalid(f"Invalid {what} {text!r} (expected Type:name, e.g. User:alice)")
        return Principal(kind.strip(), name.strip())

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"


#: The principal of a request on a PLAINTEXT listener.
ANONYMOUS = Principal("User", "ANONYMOUS")


@dataclass(frozen=True)
class Resource:
    type: ResourceType
    name: str  # CLUSTER_NAME, a database, or "db.table"

    @staticmethod
    def cluster() -> Resource:
        return Resource(ResourceType.CLUSTER, CLUSTER_NAME)

    @staticmethod
    def database(db: str) -> Resource:
        return Resource(ResourceType.DATABASE, db)

    @staticmethod
    def table(db: str, table: str) -> Resource:
        return Resource(ResourceType.TABLE, f"{db}.{table}")

    @staticmethod
    def parse(text: str) -> Resource:
        """``cluster``, ``cluster.db``, ``cluster.db.table`` (or without the ``cluster.`` prefix)."""
        parts = [p.strip() for p in str(text).strip().split(".")]
        if parts and parts[0].lower() == "cluster":
            parts = parts[1:]
        if any(not p for p in parts) or len(parts) > 2:
            raise _invalid(f"Invalid resource {text!r} (expected cluster, cluster.<db> or cluster.<db>.<table>)")
        if not parts:
            return Resource.cluster()
        return Resource.database(parts[0]) if len(parts) == 1 else Resource.table(parts[0], parts[1])

    def parent(self) -> Resource | None:
        if self.type is ResourceType.TABLE:
            return Resource.database(self.name.split(".", 1)[0])
        if self.type is ResourceType.DATABASE:
            return Resource.cluster()
        return None

    def with_ancestors(self) -> list[Resource]:
        out: list[Resource] = []
        r: Resource | None = self
        while r is not None:
            out.append(r)
            r = r.parent()
        return out

    def __str__(self) -> str:
        if self.type is ResourceType.CLUSTER:
            return "cluster"
        return f"{self.type.name.lower()} {self.name}"


@dataclass(frozen=True)
class AclBinding:
    resource: Resource
    principal: Principal
    operation: OperationType
    permission: PermissionType = PermissionType.ALLOW
    host: str = WILDCARD

    def validate(self) -> AclBinding:
        """Raises INVALID_CONFIG_EXCEPTION for what cannot be granted (ANY in a binding, an empty name)."""
        if self.resource.type is ResourceType.ANY:
            raise _invalid("An ACL needs a concrete resource type (ANY is for filters only)")
        if self.operation is OperationType.ANY:
            raise _invalid("An ACL needs a concrete operation (ANY is for filters only)")
        if self.permission is PermissionType.ANY:
            raise _invalid("An ACL needs ALLOW or DENY (ANY is for filters only)")
        if not self.resource.name or not self.principal.name or not self.host:
            raise _invalid("An ACL needs a resource name, a principal and a host")
        if self.resource.type is ResourceType.CLUSTER and self.resource.name != CLUSTER_NAME:
            raise _invalid(f"The cluster resource is named {CLUSTER_NAME!r}")
        if self.resource.type is ResourceType.TABLE and self.resource.name.count(".") != 1:
            raise _invalid(f"A table resource is named <database>.<table>, not {self.resource.name!r}")
        return self

    def __str__(self) -> str:
        return (f"{self.permission.name} {self.principal} {self.operation.name} on {self.resource}"
                f"{'' if self.host == WILDCARD else f' from {self.host}'}")


@dataclass(frozen=True)
class AclBindingFilter:
    """Matches bindings; None (or ANY) in a field matches every value."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    principal: Principal | None = None
    operation: OperationType = OperationType.ANY
    permission: PermissionType = PermissionType.ANY
    host: str | None = None

    @staticmethod
    def any() -> AclBindingFilter:
        return AclBindingFilter()

    @staticmethod
    def of(resource: Resource | str | None = None, principal: Principal | str | None = None,
           operation: OperationType | str | None = None, permission: PermissionType | str | None = None,
           host: str | None = None) -> AclBindingFilter:
        """A filter from the Flink procedures' arguments (strings, ``ANY`` or None for "any")."""
        def is_any(v) -> bool:
            return v is None or (isinstance(v, str) and v.strip().upper() in ("", "ANY"))

        res = None if is_any(resource) else (resource if isinstance(resource, Resource) else Resource.parse(resource))
        return AclBindingFilter(
            res.type if res else ResourceType.ANY, res.name if res else None,
            None if is_any(principal) else (principal if isinstance(principal, Principal)
                                            else Principal.parse(principal)),
            OperationType.ANY if is_any(operation) else OperationType.parse(operation)
            if isinstance(operation, str) else operation,
            PermissionType.ANY if is_any(permission) else PermissionType.parse(permission)
            if isinstance(permission, str) else permission,
            None if is_any(host) else host)

    def matches(self, b: AclBinding) -> bool:
        return ((self.resource_type is ResourceType.ANY or self.resource_type is b.resource.type)
                and (self.resource_name is None or self.resource_name == b.resource.name)
                and (self.principal is None or self.principal == b.principal)
                and (self.operation is OperationType.ANY or self.operation is b.operation)
                and (self.permission is PermissionType.ANY or self.permission is b.permission)
                and (self.host is None or self.host == b.host))


# ---------------------------------------------------------------- wire form (AclPb / AclFilterPb)

def binding_to_pb(b: AclBinding) -> pb.AclPb:
    return pb.AclPb(resource_type=b.resource.type.name, resource_name=b.resource.name, principal=str(b.principal),
                    operation=b.operation.name, permission=b.permission.name, host=b.host)


def binding_from_pb(m: pb.AclPb) -> AclBinding:
    """Validates what arrived (INVALID_CONFIG_EXCEPTION naming the bad field)."""
    return AclBinding(Resource(ResourceType.parse(m.resource_type), m.resource_name), Principal.parse(m.principal),
                      OperationType.parse(m.operation), PermissionType.parse(m.permission or "ALLOW"),
                      m.host or WILDCARD).validate()


def filter_to_pb(f: AclBindingFilter) -> pb.AclFilterPb:
    return pb.AclFilterPb(resource_type=f.resource_type.name, resource_name=f.resource_name or "",
                          principal=str(f.principal) if f.principal else "", operation=f.operation.name,
                          permission=f.permission.name, host=f.host or "")


def filter_from_pb(m: pb.AclFilterPb) -> AclBindingFilter:
    def given(v: str) -> bool:
        return bool(v) and v.strip().upper() != "ANY"

    return AclBindingFilter(
        ResourceType.parse(m.resource_type) if given(m.resource_type) else ResourceType.ANY,
        m.resource_name if given(m.resource_name) else None,
        Principal.parse(m.principal) if given(m.principal) else None,
        OperationType.parse(m.operation) if given(m.operation) else OperationType.ANY,
        PermissionType.parse(m.permission) if given(m.permission) else PermissionType.ANY,
        m.host if given(m.host) else None)
