"""A throw-away certificate authority for tests, notebooks and ``LocalCluster(tls=True)``: a self-signed CA and
certificates it signs, written as PEM files (keys in PKCS#8, which both grpcio and the Java connector's netty read).

    ca = SelfSignedCa.create(directory / "ca")
    server = ca.issue(directory / "server", hosts=["127.0.0.1", "localhost"])   # server.cert_path / .key_path
    client = ca.issue(directory / "alice", hosts=[], common_name="alice")        # a client certificate (mTLS)

Never use it for a real deployment: the CA's key sits next to its certificate, unencrypted. Needs the
``cryptography`` package (imported only here).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

VALID_DAYS = 30


@dataclass(frozen=True)
class Issued:
    """PEM files of one certificate and its private key."""

    cert_path: Path
    key_path: Path


@dataclass(frozen=True)
class SelfSignedCa:
    cert_path: Path
    key_path: Path

    @classmethod
    def create(cls, prefix: Path, common_name: str = "fluss-test-ca") -> SelfSignedCa:
        """Makes a CA; writes ``<prefix>.crt`` and ``<prefix>.key``."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.x509.oid import NameOID

        key = _new_key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False, encipher_only=False,
                                             decipher_only=False), critical=True)
                .sign(key, hashes.SHA256()))
        return cls(*_write(prefix, cert, key))

    def issue(self, prefix: Path, hosts: list[str], common_name: str | None = None) -> Issued:
        """A certificate signed by this CA for ``hosts`` (IP addresses or DNS names, as subject alternative
        names), usable both as a server and as a client certificate; writes ``<prefix>.crt`` / ``<prefix>.key``."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        ca_cert = x509.load_pem_x509_certificate(self.cert_path.read_bytes())
        ca_key = serialization.load_pem_private_key(self.key_path.read_bytes(), password=None)
        key = _new_key()
        now = datetime.datetime.now(datetime.UTC)
        names: list[x509.GeneralName] = []
        for h in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                names.append(x509.DNSName(h))
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                               common_name or (hosts[0] if hosts else "fluss"))]))
                   .issuer_name(ca_cert.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                         ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return Issued(*_write(prefix, cert, key))


def _new_key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _write(prefix: Path, cert, key) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization

    prefix.parent.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = prefix.with_suffix(".crt"), prefix.with_suffix(".key")
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return cert_path, key_path
