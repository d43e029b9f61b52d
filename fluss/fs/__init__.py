"""Remote file systems: an fsspec file system for a URL, configured with Fluss's option keys.

``remote.data.dir`` (KV snapshots, tiered log segments) and the lake warehouse are URLs: a local path or
``file://`` by default, ``s3://bucket/prefix`` for object storage. :func:`filesystem` returns the fsspec file system
for a URL and the path inside it; a scheme is served by a factory registered in :data:`FACTORIES` (so another store is
a new factory, not a new ``if``). Options come from, in order: the ``options`` argument, then what
:func:`configure` recorded for the process (a server configures itself from ``server.yaml`` at start-up; a client
from the coordinator's GetFileSystemSecurityToken answer).

S3 options (Fluss's keys, as in ``server.yaml``):

==========================  ===============================================================================
``s3.endpoint``             endpoint URL of an S3-compatible store (``http://127.0.0.1:9000``); AWS if unset
``s3.region``               signing region [``us-east-1``]
``s3.access-key``           access key id (else the default AWS credential chain)
``s3.secret-key``           secret access key
``s3.session-token``        session token of temporary credentials
``s3.path.style.access``    ``true`` for path-style addressing (MinIO, moto); ``s3.path-style-access`` too
==========================  ===============================================================================

File systems are cached per (scheme, options): fsspec instances keep their connection pools.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from fluss.errors import ErrorCode, FlussError

S3_ENDPOINT = "s3.endpoint"
S3_REGION = "s3.region"
S3_ACCESS_KEY = "s3.access-key"
S3_SECRET_KEY = "s3.secret-key"
S3_SESSION_TOKEN = "s3.session-token"
S3_PATH_STYLE_ACCESS = "s3.path.style.access"
S3_PATH_STYLE_ACCESS_ALIAS = "s3.path-style-access"

#: The option keys a client needs to reach the same store as the servers (sent by GetFileSystemSecurityToken).
S3_KEYS = (S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY, S3_SECRET_KEY, S3_SESSION_TOKEN, S3_PATH_STYLE_ACCESS,
           S3_PATH_STYLE_ACCESS_ALIAS)

if TYPE_CHECKING:  # fsspec is imported on first use: a server without remote storage never needs it
    import fsspec

FileSystemFactory = Callable[[Mapping[str, str]], "fsspec.AbstractFileSystem"]

_lock = threading.Lock()
_configured: dict[str, str] = {}
_cache: dict[tuple, fsspec.AbstractFileSystem] = {}


def scheme_of(url: str) -> str:
    """``s3`` for ``s3://b/p``, ``file`` for a local path or ``file://``."""
    head, sep, _ = str(url).partition("://")
    return head.lower() if sep else "file"


def configure(options: Mapping[str, object]) -> None:
    """Records the process-wide file-system options (every ``s3.*`` key of ``options``)."""
    with _lock:
        for key, value in options.items():
            if key.startswith("s3."):
                _configured[key] = str(value)
        _cache.clear()


def configured_options() -> dict[str, str]:
    with _lock:
        return dict(_configured)


def _truthy(value: str | None) -> bool:
    return str(value or "").strip().lower() in ("true", "1", "yes")


def s3_filesystem(options: Mapping[str, str]) -> fsspec.AbstractFileSystem:
    """An ``s3fs`` file system for Fluss's ``s3.*`` options."""
    try:
        import s3fs
    except ImportError as e:  # pragma: no cover - s3fs is a runtime dependency
        raise FlussError("s3:// URLs need the 's3fs' package", ErrorCode.INVALID_CONFIG_EXCEPTION) from e
    client_kwargs: dict[str, object] = {"region_name": options.get(S3_REGION) or "us-east-1"}
    if options.get(S3_ENDPOINT):
        client_kwargs["endpoint_url"] = options[S3_ENDPOINT]
    path_style = _truthy(options.get(S3_PATH_STYLE_ACCESS)) or _truthy(options.get(S3_PATH_STYLE_ACCESS_ALIAS))
    config_kwargs: dict[str, object] = {"retries": {"max_attempts": 3, "mode": "standard"},
                                        "connect_timeout": 5, "read_timeout": 60}
    if path_style:
        config_kwargs["s3"] = {"addressing_style": "path"}
    key, secret = options.get(S3_ACCESS_KEY), options.get(S3_SECRET_KEY)
    if bool(key) != bool(secret):
        raise FlussError(f"'{S3_ACCESS_KEY}' and '{S3_SECRET_KEY}' must be set together",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return s3fs.S3FileSystem(key=key or None, secret=secret or None, token=options.get(S3_SESSION_TOKEN) or None,
                             anon=False, client_kwargs=client_kwargs, config_kwargs=config_kwargs,
                             skip_instance_cache=True, use_listings_cache=False)


def _local_filesystem(options: Mapping[str, str]) -> fsspec.AbstractFileSystem:
    import fsspec

    return fsspec.filesystem("file")


#: Factories by URL scheme; any other scheme goes to fsspec with no options.
FACTORIES: dict[str, FileSystemFactory] = {"s3": s3_filesystem, "s3a": s3_filesystem, "file": _local_filesystem}


def filesystem(url: str, options: Mapping[str, str] | None = None) -> tuple[fsspec.AbstractFileSystem, str]:
    """The file system serving ``url`` and the path of ``url`` inside it (no trailing slash)."""
    scheme = scheme_of(url)
    merged = {**configured_options(), **(options or {})}
    prefix = "s3." if scheme in ("s3", "s3a") else f"{scheme}."
    relevant = {k: v for k, v in merged.items() if k.startswith(prefix)}
    cache_key = (scheme, tuple(sorted(relevant.items())))
    with _lock:
        fs = _cache.get(cache_key)
    if fs is None:
        factory = FACTORIES.get(scheme)
        if factory is None:
            import fsspec

            fs = fsspec.filesystem(scheme)
        else:
            fs = factory(merged)
        with _lock:
            _cache[cache_key] = fs
    return fs, _path_in(fs, url)


def _path_in(fs: fsspec.AbstractFileSystem, url: str) -> str:
    path = fs._strip_protocol(str(url))
    return path.rstrip("/") or "/"


def join(base: str, *parts: str) -> str:
    """``base/part/...`` for a URL or a local path."""
    out = str(base).rstrip("/")
    for p in parts:
        out += "/" + str(p).strip("/")
    return out


__all__ = [
    "FACTORIES", "S3_ACCESS_KEY", "S3_ENDPOINT", "S3_KEYS", "S3_PATH_STYLE_ACCESS", "S3_PATH_STYLE_ACCESS_ALIAS",
    "S3_REGION", "S3_SECRET_KEY", "S3_SESSION_TOKEN", "configure", "configured_options", "filesystem", "join",
    "s3_filesystem", "scheme_of",
]  # fmt: skip
