"""The security options of one server, read once from its ``ServerConfig`` and checked at start-up.

    bind.listeners: FLUSS://host:9123, CLIENT://host:9124, INTERNAL://host:9125
    security.protocol.map: CLIENT:SASL, INTERNAL:SASL        # a listener not named here is PLAINTEXT
    internal.listener.name: INTERNAL                         # server-to-server traffic (default FLUSS)
    security.sasl.enabled.mechanisms: PLAIN
    security.sasl.plain.jaas.config: ...PlainLoginModule required user_admin="..." user_alice="...";
    security.sasl.listener.name.internal.plain.jaas.config: ...PlainLoginModule required
        username="fluss-server" password="..." user_fluss-server="...";
    authorizer.enabled: true
    super.users: User:admin
    security.ssl.listeners: CLIENT, INTERNAL                 # served over TLS (any listener; default none)
    security.ssl.certificate.path: /etc/fluss/server.crt     # PEM chain of this server
    security.ssl.key.path: /etc/fluss/server.key             # its PEM private key
    security.ssl.truststore.path: /etc/fluss/ca.crt          # CAs of client certificates and of the other servers
    security.ssl.client-auth: none                           # or required (mutual TLS)

A listener's users come from its own ``security.sasl.listener.name.<listener>.plain.jaas.config`` (listener name
in lower case, as Fluss writes it) or else from ``security.sasl.plain.jaas.config``. When the internal listener is
SASL, its JAAS entry's ``username``/``password`` are the credentials the server uses towards other servers, and
that user is the *internal principal*: the only one (besides super users) allowed to call the server-to-server
APIs there. TLS is orthogonal to the protocol: a TLS listener may be PLAINTEXT (encrypted, anonymous) or SASL
(SASL/PLAIN over TLS). When the internal listener is TLS, the server calls other servers over TLS, trusting
``security.ssl.truststore.path`` and showing its own certificate. Every mistake is an INVALID_CONFIG_EXCEPTION
naming the key, never the value (it may hold passwords).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fluss.acl import Principal
from fluss.errors import ErrorCode, FlussError
from fluss.rpc.jaas import JaasConfig, parse_jaas_config
from fluss.rpc.listeners import Listener
from fluss.rpc.sasl import SUPPORTED_MECHANISMS
from fluss.rpc.tls import CLIENT_AUTH_NONE, CLIENT_AUTH_VALUES, ClientTls, ServerTls, read_pem

SECURITY_PROTOCOL_MAP = "security.protocol.map"
SASL_ENABLED_MECHANISMS = "security.sasl.enabled.mechanisms"
SASL_PLAIN_JAAS_CONFIG = "security.sasl.plain.jaas.config"
SASL_LISTENER_JAAS_PREFIX = "security.sasl.listener.name."
INTERNAL_LISTENER_NAME = "internal.listener.name"
AUTHORIZER_ENABLED = "authorizer.enabled"
SUPER_USERS = "super.users"
SSL_LISTENERS = "security.ssl.listeners"
SSL_CERTIFICATE = "security.ssl.certificate.path"
SSL_KEY = "security.ssl.key.path"
SSL_TRUSTSTORE = "security.ssl.truststore.path"
SSL_CLIENT_AUTH = "security.ssl.client-auth"

PLAINTEXT = "PLAINTEXT"
SASL = "SASL"
PROTOCOLS = (PLAINTEXT, SASL)
DEFAULT_INTERNAL_LISTENER = "FLUSS"


def listener_jaas_key(listener: str, mechanism: str = "plain") -> str:
    return f"{SASL_LISTENER_JAAS_PREFIX}{listener.lower()}.{mechanism.lower()}.jaas.config"


@dataclass(frozen=True)
class ListenerSecurity:
    name: str
    protocol: str
    users: dict[str, str] = field(default_factory=dict, repr=False)  # SASL/PLAIN: username -> password
    tls: bool = False

    @property
    def sasl(self) -> bool:
        return self.protocol == SASL


@dataclass(frozen=True)
class SecuritySettings:
    listeners: dict[str, ListenerSecurity]
    internal_listener: str
    internal_credentials: tuple[str, str] | None = field(default=None, repr=False)
    authorizer_enabled: bool = False
    super_users: frozenset[Principal] = frozenset()
    tls: ServerTls | None = None

    @property
    def internal_tls(self) -> ClientTls | None:
        """TLS towards other servers' internal listener (None: it is plaintext)."""
        return self.tls.as_client() if self.tls is not None and self.listeners[self.internal_listener].tls else None

    @property
    def internal_principal(self) -> Principal | None:
        return Principal.user(self.internal_credentials[0]) if self.internal_credentials else None

    def of(self, listener: str) -> ListenerSecurity:
        return self.listeners[listener]

    @property
    def any_sasl(self) -> bool:
        return any(ls.sasl for ls in self.listeners.values())

    @classmethod
    def from_config(cls, get, listeners: list[Listener]) -> SecuritySettings:
        """``get(key)`` reads a server option (None when unset); ``listeners`` are the bound listeners."""
        names = [lst.name for lst in listeners]
        protocols = parse_protocol_map(get(SECURITY_PROTOCOL_MAP) or "", names)
        mechanisms = [m.strip().upper() for m in (get(SASL_ENABLED_MECHANISMS) or "PLAIN").split(",") if m.strip()]
        for m in mechanisms:
            if m not in SUPPORTED_MECHANISMS:
                raise FlussError(f"Unsupported SASL mechanism {m!r} in '{SASL_ENABLED_MECHANISMS}' (supported: "
                                 f"{', '.join(SUPPORTED_MECHANISMS)})", ErrorCode.INVALID_CONFIG_EXCEPTION)
        internal = (get(INTERNAL_LISTENER_NAME) or DEFAULT_INTERNAL_LISTENER).strip().upper()
        if internal not in names:
            if len(names) == 1 and not get(INTERNAL_LISTENER_NAME):
                internal = names[0]
            else:
                raise FlussError(f"'{INTERNAL_LISTENER_NAME}' is {internal}, which is not one of the bound "
                                 f"listeners ({', '.join(names)})", ErrorCode.INVALID_CONFIG_EXCEPTION)
        tls_names = parse_tls_listeners(get(SSL_LISTENERS) or "", names)
        tls = server_tls(get) if tls_names else None
        out: dict[str, ListenerSecurity] = {}
        credentials = None
        for name in names:
            protocol = protocols.get(name, PLAINTEXT)
            if protocol != SASL:
                out[name] = ListenerSecurity(name, protocol, tls=name in tls_names)
                continue
            if "PLAIN" not in mechanisms:
                raise FlussError(f"Listener {name} is SASL but '{SASL_ENABLED_MECHANISMS}' does not enable PLAIN",
                                 ErrorCode.INVALID_CONFIG_EXCEPTION)
            jaas, key = _jaas_of(get, name)
            if not jaas.users:
                raise FlussError(f"Listener {name} is SASL but '{key}' declares no user (user_<name>=\"<password>\")",
                                 ErrorCode.INVALID_CONFIG_EXCEPTION)
            out[name] = ListenerSecurity(name, protocol, jaas.users, tls=name in tls_names)
            if name == internal:
                if not jaas.username or jaas.password is None:
                    raise FlussError(f"The internal listener {name} is SASL: '{key}' must give the server's own "
                                     f"username=\"...\" password=\"...\"", ErrorCode.INVALID_CONFIG_EXCEPTION)
                if jaas.users.get(jaas.username) != jaas.password:
                    raise FlussError(f"The internal listener {name} is SASL: in '{key}', the server's username must "
                                     f"also be a user (user_{jaas.username}=\"<its password>\")",
                                     ErrorCode.INVALID_CONFIG_EXCEPTION)
                credentials = (jaas.username, jaas.password)
        enabled = str(get(AUTHORIZER_ENABLED) or "false").strip().lower()
        if enabled not in ("true", "false"):
            raise FlussError(f"Invalid value for '{AUTHORIZER_ENABLED}': {enabled!r} (expected true or false)",
                             ErrorCode.INVALID_CONFIG_EXCEPTION)
        supers = frozenset(parse_super_users(get(SUPER_USERS) or ""))
        return cls(out, internal, credentials, enabled == "true", supers, tls)


def parse_tls_listeners(text: str, names: list[str]) -> frozenset[str]:
    out = set()
    for item in (p.strip().upper() for p in text.split(",")):
        if not item:
            continue
        if item not in names:
            raise FlussError(f"'{SSL_LISTENERS}' names listener {item}, which is not bound (bind.listeners has "
                             f"{', '.join(names)})", ErrorCode.INVALID_CONFIG_EXCEPTION)
        out.add(item)
    return frozenset(out)


def server_tls(get) -> ServerTls:
    """The server's TLS material (some listener is TLS): certificate and key are required."""
    for key in (SSL_CERTIFICATE, SSL_KEY):
        if not get(key):
            raise FlussError(f"'{SSL_LISTENERS}' serves listeners over TLS but '{key}' is not set",
                             ErrorCode.INVALID_CONFIG_EXCEPTION)
    client_auth = str(get(SSL_CLIENT_AUTH) or CLIENT_AUTH_NONE).strip().lower()
    if client_auth not in CLIENT_AUTH_VALUES:
        raise FlussError(f"Invalid value for '{SSL_CLIENT_AUTH}': {client_auth!r} (expected "
                         f"{' or '.join(CLIENT_AUTH_VALUES)})", ErrorCode.INVALID_CONFIG_EXCEPTION)
    truststore = get(SSL_TRUSTSTORE)
    if client_auth != CLIENT_AUTH_NONE and not truststore:
        raise FlussError(f"'{SSL_CLIENT_AUTH}' is {client_auth}: set '{SSL_TRUSTSTORE}' (the CAs that client "
                         f"certificates must chain to)", ErrorCode.INVALID_CONFIG_EXCEPTION)
    return ServerTls(read_pem(get(SSL_CERTIFICATE), SSL_CERTIFICATE), read_pem(get(SSL_KEY), SSL_KEY, "PRIVATE KEY"),
                     read_pem(truststore, SSL_TRUSTSTORE) if truststore else None, client_auth)


def parse_protocol_map(text: str, names: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        listener, sep, protocol = item.partition(":")
        listener, protocol = listener.strip().upper(), protocol.strip().upper()
        if not sep or not listener:
            raise FlussError(f"Invalid entry {item!r} in '{SECURITY_PROTOCOL_MAP}' (expected LISTENER:PROTOCOL, "
                             f"e.g. CLIENT:SASL)", ErrorCode.INVALID_CONFIG_EXCEPTION)
        if protocol not in PROTOCOLS:
            raise FlussError(f"Unknown security protocol {protocol!r} for listener {listener} in "
                             f"'{SECURITY_PROTOCOL_MAP}' (supported: {', '.join(PROTOCOLS)})",
                             ErrorCode.INVALID_CONFIG_EXCEPTION)
        if listener not in names:
            raise FlussError(f"'{SECURITY_PROTOCOL_MAP}' names listener {listener}, which is not bound "
                             f"(bind.listeners has {', '.join(names)})", ErrorCode.INVALID_CONFIG_EXCEPTION)
        out[listener] = protocol
    return out


def parse_super_users(text: str) -> list[Principal]:
    """``User:admin;User:bob`` (``,`` works too; a bare ``admin`` is ``User:admin``)."""
    out = []
    for item in (p.strip() for p in text.replace(",", ";").split(";")):
        if item:
            out.append(Principal.parse(item, SUPER_USERS))
    return out


def _jaas_of(get, listener: str) -> tuple[JaasConfig, str]:
    for key in (listener_jaas_key(listener), SASL_PLAIN_JAAS_CONFIG):
        text = get(key)
        if text:
            return parse_jaas_config(text, key), key
    raise FlussError(f"Listener {listener} is SASL but neither '{listener_jaas_key(listener)}' nor "
                     f"'{SASL_PLAIN_JAAS_CONFIG}' is set", ErrorCode.INVALID_CONFIG_EXCEPTION)
