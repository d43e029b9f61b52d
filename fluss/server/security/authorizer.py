"""The ACL authorizer: every server's in-memory copy of the ACLs in ZooKeeper, and the allow/deny decision.

The ACLs live in ZooKeeper (``/acls/{type}/{name}``, written by the active coordinator for ``create_acls`` and
``drop_acls``); each server watches ``/acl_changes`` and reloads them all when it changes, so a new ACL applies on
every server within a ZooKeeper watch round trip (milliseconds; a periodic reload every
:data:`RELOAD_INTERVAL_S` covers a lost watch). The reload builds a new map and swaps it in one assignment, so a
request never sees half an update.

Decision (``authorizer.enabled``): a request of another server (``Session.internal``) and a super user
(``super.users``) are allowed everything; otherwise a DENY matching the principal (or ``User:*``), the host (or
``*``), an operation implying the requested one, on the resource or an ancestor (table → database → cluster), wins;
else an ALLOW matching the same way allows; else the request is refused with AUTHORIZATION_EXCEPTION naming the
principal, the operation and the resource.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from fluss.acl import (
    WILDCARD,
    AclBinding,
    AclBindingFilter,
    OperationType,
    PermissionType,
    Principal,
    Resource,
    ResourceType,
)
from fluss.errors import ErrorCode, FlussError
from fluss.server.security.session import Session
from fluss.server.security.settings import SecuritySettings
from fluss.server.zk.data import AclEntry, ResourceAcls

log = logging.getLogger("fluss.security")

RELOAD_INTERVAL_S = 30.0


def sort_key(b: AclBinding) -> tuple:
    return (b.resource.type.name, b.resource.name, str(b.principal), b.operation.name, b.permission.name, b.host)


def binding_of(rtype: str, name: str, entry: AclEntry) -> AclBinding:
    return AclBinding(Resource(ResourceType[rtype], name), Principal.parse(entry.principal),
                      OperationType[entry.operation], PermissionType[entry.permission], entry.host)


def entry_of(b: AclBinding) -> AclEntry:
    return AclEntry(str(b.principal), b.operation.name, b.permission.name, b.host)


class Authorizer:
    def __init__(self, settings: SecuritySettings) -> None:
        self.enabled = settings.authorizer_enabled
        self.super_users = settings.super_users
        self._acls: dict[Resource, tuple[AclBinding, ...]] = {}
        self._zk = None

    # ------------------------------------------------------------ the ACL copy

    def start(self, zk) -> None:
        """Loads the ACLs from ZooKeeper and keeps them in sync (blocking; call it off the event loop)."""
        self._zk = zk
        zk.watch_acl_changes(self.reload)

    def reload(self) -> None:
        if self._zk is None:
            return
        try:
            nodes = self._zk.list_resource_acls()
        except Exception:  # noqa: BLE001 - keep the current copy; the next change or the periodic reload retries
            log.warning("could not reload ACLs from ZooKeeper", exc_info=True)
            return
        self.replace([binding_of(rtype, name, e) for (rtype, name), node in nodes.items() for e in node.acls])

    def replace(self, bindings: list[AclBinding]) -> None:
        by_resource: dict[Resource, list[AclBinding]] = defaultdict(list)
        for b in bindings:
            by_resource[b.resource].append(b)
        self._acls = {r: tuple(bs) for r, bs in by_resource.items()}

    def bindings(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        out = [b for bs in self._acls.values() for b in bs]
        return sorted((b for b in out if acl_filter is None or acl_filter.matches(b)), key=sort_key)

    # ------------------------------------------------------------ decisions

    def is_super(self, session: Session) -> bool:
        return session.internal or session.principal in self.super_users

    def authorize(self, session: Session, operation: OperationType, resource: Resource) -> bool:
        if not self.enabled or self.is_super(session):
            return True
        granted_by = operation.implied_by()
        allowed = False
        acls = self._acls
        for r in resource.with_ancestors():
            for b in acls.get(r, ()):
                if b.operation in granted_by and self._matches(b, session):
                    if b.permission is PermissionType.DENY:
                        return False
                    allowed = True
        return allowed

    def check(self, session: Session, operation: OperationType, resource: Resource) -> None:
        if not self.authorize(session, operation, resource):
            raise FlussError(f"Principal {session.principal} has no {operation.name} permission on {resource}",
                             ErrorCode.AUTHORIZATION_EXCEPTION)

    def allowed_somewhere(self, session: Session, operation: OperationType) -> bool:
        """``operation`` on at least one resource: the cluster, or a database or table an ALLOW of the principal
        names (a DENY on it or above it still wins)."""
        if self.authorize(session, operation, Resource.cluster()):
            return True
        granted_by = operation.implied_by()
        return any(b.permission is PermissionType.ALLOW and b.operation in granted_by and self._matches(b, session)
                   and self.authorize(session, operation, r)
                   for r, bs in self._acls.items() for b in bs)

    def may_see(self, session: Session, resource: Resource) -> bool:
        """DESCRIBE on ``resource``, or some ALLOW for the principal on a resource below it (a user granted a
        table sees its database in listings)."""
        if self.authorize(session, OperationType.DESCRIBE, resource):
            return True
        prefix = resource.name + "."
        for r, bs in self._acls.items():
            below = (resource.type is ResourceType.CLUSTER or
                     (resource.type is ResourceType.DATABASE and r.type is ResourceType.TABLE
                      and r.name.startswith(prefix)))
            if below and any(b.permission is PermissionType.ALLOW and self._matches(b, session) for b in bs):
                return True
        return False

    @staticmethod
    def _matches(b: AclBinding, session: Session) -> bool:
        p = b.principal
        if p != session.principal and not (p.name == WILDCARD and p.type == session.principal.type):
            return False
        return b.host == WILDCARD or b.host == session.host


def add_to(acls: ResourceAcls, bindings: list[AclBinding]) -> ResourceAcls | None:
    """``acls`` with ``bindings`` added (None when all were there already)."""
    present = {(e.principal, e.operation, e.permission, e.host) for e in acls.acls}
    new = []
    for e in map(entry_of, bindings):
        key = (e.principal, e.operation, e.permission, e.host)
        if key not in present:
            present.add(key)
            new.append(e)
    return ResourceAcls(acls.acls + new) if new else None
