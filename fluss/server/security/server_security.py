"""One server's security, assembled from its configuration: what the server builder, the internal channels and
start-up need (:class:`ServerSecurity`).

Every listener's chain is ErrorDoor → :class:`~.authentication.Authenticator` → :class:`~.access.AccessControl`
→ metrics → logging. When nothing is secured (every listener PLAINTEXT, no authorizer, one listener) the access
check is left out; the Authenticator stays (a SASL client must hear that the listener is PLAINTEXT rather than be
let in silently). The server's own calls to other servers (replication, coordinator notifications, tablet →
coordinator) carry the internal listener's credentials, over TLS when the internal listener is TLS. Listeners named
in ``security.ssl.listeners`` are served over TLS.
"""

from __future__ import annotations

import logging
import threading

from fluss.rpc.channels import ChannelFactory
from fluss.rpc.sasl import SaslPlainCredentials
from fluss.rpc.server import RpcServerBuilder
from fluss.server.security.access import AccessControl, TablePathOf
from fluss.server.security.authentication import AuthenticationStats, Authenticator
from fluss.server.security.authorizer import RELOAD_INTERVAL_S, Authorizer
from fluss.server.security.settings import SecuritySettings

log = logging.getLogger("fluss.security")


class ServerSecurity:
    def __init__(self, settings: SecuritySettings) -> None:
        self.settings = settings
        self.authorizer = Authorizer(settings)
        self.stats = AuthenticationStats()
        self._stop = threading.Event()

    @classmethod
    def from_config(cls, config) -> ServerSecurity:
        return cls(config.security())

    @property
    def active(self) -> bool:
        s = self.settings
        return s.any_sasl or s.authorizer_enabled or len(s.listeners) > 1

    def install(self, builder: RpcServerBuilder, table_path_of: TablePathOf) -> RpcServerBuilder:
        if self.settings.tls is not None:
            credentials = self.settings.tls.server_credentials()
            for name, listener in self.settings.listeners.items():
                if listener.tls:
                    builder.use_tls(name, credentials)
        builder.add_interceptor(lambda listener: Authenticator(listener, self.settings, self.stats))
        if self.active:
            builder.add_interceptor(lambda _listener: AccessControl(self.authorizer, table_path_of))
        return builder

    def internal_channel_factory(self) -> ChannelFactory:
        """Channels to other servers' internal listener, with this server's credentials when it is SASL, over TLS
        when it is TLS."""
        creds = self.settings.internal_credentials
        return ChannelFactory([SaslPlainCredentials(*creds)] if creds else (), tls=self.settings.internal_tls)

    def start(self, zk) -> None:
        """Loads the ACLs and keeps them in sync (blocking: call it off the event loop)."""
        if not self.settings.authorizer_enabled:
            return
        self.authorizer.start(zk)
        threading.Thread(target=self._reload_loop, name="acl-reload", daemon=True).start()

    def _reload_loop(self) -> None:
        while not self._stop.wait(RELOAD_INTERVAL_S):
            self.authorizer.reload()

    def stop(self) -> None:
        self._stop.set()
        if self.active:
            log.info("authentication: %d succeeded, %d failed since start", self.stats.succeeded, self.stats.failed)
