"""TLS material of gRPC channels and listeners, read from PEM files (gRPC's own TLS: BoringSSL in grpcio).

* :class:`ClientTls` - what a client (or a server calling another server) needs: the CA certificates it trusts
  (None: the system's roots), and a certificate and key of its own when the server asks for one (mutual TLS).
* :class:`ServerTls` - a listener's certificate chain and key, the CA certificates that client certificates must
  chain to, and whether a client certificate is required (``client-auth``).

Files are read once, when the settings are made; a missing or unreadable file, or one that is no PEM of the
expected kind, is an INVALID_CONFIG_EXCEPTION naming the option (never the file's content).
:func:`tls_failure` turns gRPC's transport text about a failed handshake into a sentence a person can act on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from fluss.errors import ErrorCode, FlussError

CLIENT_AUTH_NONE = "none"
CLIENT_AUTH_REQUIRED = "required"
CLIENT_AUTH_VALUES = (CLIENT_AUTH_NONE, CLIENT_AUTH_REQUIRED)


def read_pem(path: str | Path, option: str, kind: str = "CERTIFICATE") -> bytes:
    """The bytes of a PEM file holding at least one ``kind`` block (``CERTIFICATE`` or ``PRIVATE KEY``)."""
    try:
        data = Path(str(path).strip()).expanduser().read_bytes()
    except OSError as e:
        raise FlussError(f"'{option}' names {path}, which cannot be read ({e.strerror or e})",
                         ErrorCode.INVALID_CONFIG_EXCEPTION) from None
    if kind == "PRIVATE KEY":
        ok = re.search(rb"-----BEGIN ([A-Z]+ )?PRIVATE KEY-----", data) is not None
    else:
        ok = f"-----BEGIN {kind}-----".encode() in data
    if not ok:
        raise FlussError(f"'{option}' names {path}, which holds no PEM {kind.lower()}",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return data


@dataclass(frozen=True)
class ClientTls:
    trusted_ca: bytes | None = field(default=None, repr=False)
    certificate: bytes | None = field(default=None, repr=False)
    private_key: bytes | None = field(default=None, repr=False)

    def channel_credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(root_certificates=self.trusted_ca, private_key=self.private_key,
                                            certificate_chain=self.certificate)

    @classmethod
    def from_files(cls, truststore: str | None, certificate: str | None, key: str | None,
                   prefix: str) -> ClientTls:
        """``prefix`` + ``truststore.path`` / ``certificate.path`` / ``key.path`` name the options in errors."""
        if bool(certificate) != bool(key):
            raise FlussError(f"Set both '{prefix}certificate.path' and '{prefix}key.path' (a client certificate "
                             f"needs its key), or neither", ErrorCode.INVALID_CONFIG_EXCEPTION)
        return cls(read_pem(truststore, f"{prefix}truststore.path") if truststore else None,
                   read_pem(certificate, f"{prefix}certificate.path") if certificate else None,
                   read_pem(key, f"{prefix}key.path", "PRIVATE KEY") if key else None)


@dataclass(frozen=True)
class ServerTls:
    certificate: bytes = field(repr=False)
    private_key: bytes = field(repr=False)
    trusted_ca: bytes | None = field(default=None, repr=False)
    client_auth: str = CLIENT_AUTH_NONE

    def server_credentials(self) -> grpc.ServerCredentials:
        required = self.client_auth == CLIENT_AUTH_REQUIRED
        return grpc.ssl_server_credentials([(self.private_key, self.certificate)],
                                           root_certificates=self.trusted_ca, require_client_auth=required)

    def as_client(self) -> ClientTls:
        """How this server reaches another server's TLS listener: it trusts the same CAs and shows its own
        certificate (used when that listener wants client certificates)."""
        return ClientTls(self.trusted_ca, self.certificate, self.private_key)


_HANDSHAKE = re.compile(r"ssl handshake failed|tsi_protocol_failure|handshake", re.IGNORECASE)
_NOT_TLS = re.compile(r"wrong_version_number|http_request|unknown_protocol", re.IGNORECASE)
_CLOSED = re.compile(r"socket closed|connection reset|end of tcp stream|eof", re.IGNORECASE)


def tls_failure(details: str, tls: bool) -> str | None:
    """Why a connection failed, when TLS is the reason (None otherwise): a TLS client at a plaintext listener, a
    certificate the client does not trust, a client certificate missing or refused (TLS 1.3: the server closes the
    connection right after the handshake), or a plaintext client at a TLS listener (the server closes the connection
    at once)."""
    if tls and _HANDSHAKE.search(details):
        if _NOT_TLS.search(details):
            return ("TLS handshake failed: the listener does not speak TLS (a plaintext listener? unset "
                    "client.security.ssl.enabled, or use the TLS listener's port)")
        reason = details.rsplit(":", 1)[-1].strip() or "handshake failure"
        return (f"TLS handshake failed ({reason}): the server's certificate is not signed by a CA in "
                f"client.security.ssl.truststore.path, does not name this host, or the server refused this "
                f"client's certificate")
    if tls and _CLOSED.search(details):
        return ("the server closed the connection after the TLS handshake: it wants a client certificate signed by "
                "a CA it trusts (client.security.ssl.certificate.path and client.security.ssl.key.path)")
    if not tls and _CLOSED.search(details):
        return ("the server closed the connection at once: a TLS listener? (set client.security.ssl.enabled and "
                "client.security.ssl.truststore.path)")
    return None
