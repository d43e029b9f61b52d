"""JAAS-style option values, as Fluss (and Kafka) write them in ``security.sasl.plain.jaas.config``::

    org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required
        username="admin" password="admin-secret"
        user_admin="admin-secret" user_alice="alice-secret";

A login module class, a control flag (``required``, ``requisite``, ``sufficient``, ``optional``) and
``key="value"`` options, ending with ``;``. For the PLAIN mechanism, every ``user_<name>="<password>"`` option is a
user the server accepts; ``username``/``password`` are the credentials this process itself uses as a client (a
server calling the internal listener of another server, or a client's ``client.security.sasl.jaas.config``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fluss.errors import ErrorCode, FlussError

_FLAGS = ("required", "requisite", "sufficient", "optional")
_OPTION = re.compile(r'\s*([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";=]+))')


@dataclass(frozen=True)
class JaasConfig:
    login_module: str
    options: dict[str, str] = field(repr=False)

    @property
    def users(self) -> dict[str, str]:
        """``user_<name>`` options: name → password."""
        return {k[len("user_"):]: v for k, v in self.options.items() if k.startswith("user_") and len(k) > 5}

    @property
    def username(self) -> str | None:
        return self.options.get("username")

    @property
    def password(self) -> str | None:
        return self.options.get("password")


def parse_jaas_config(text: str, key: str) -> JaasConfig:
    """Parses one login module entry; INVALID_CONFIG_EXCEPTION naming ``key`` (never the text: it holds
    passwords) for a malformed value."""
    rest = str(text).strip()
    if rest.endswith(";"):
        rest = rest[:-1].rstrip()
    parts = rest.split(None, 2)
    if len(parts) < 2 or parts[1].lower() not in _FLAGS or "=" in parts[0]:
        raise FlussError(f"Invalid JAAS configuration in '{key}': expected '<LoginModule class> required "
                         f"key=\"value\" ...;'", ErrorCode.INVALID_CONFIG_EXCEPTION)
    module, body = parts[0], parts[2] if len(parts) > 2 else ""
    options: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        if body[pos:].strip() == "":
            break
        match = _OPTION.match(body, pos)
        if match is None:
            raise FlussError(f"Invalid JAAS configuration in '{key}': cannot read the options after "
                             f"{len(options)} option(s) (expected key=\"value\")", ErrorCode.INVALID_CONFIG_EXCEPTION)
        value = match.group(2)
        value = re.sub(r"\\(.)", r"\1", value) if value is not None else match.group(3)
        options[match.group(1)] = value
        pos = match.end()
    return JaasConfig(module, options)
