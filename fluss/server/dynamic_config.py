"""Live cluster configuration (Fluss's ``alterClusterConfigs`` / ``describeClusterConfigs``).

The cluster's dynamic overrides are one ZooKeeper node, ``/cluster_config`` = ``{"configs": {key: value}}``. The
active coordinator is its only writer (:func:`apply_alter` checks a request and computes the new map; the write is
a compare-and-set on the node's version). The coordinator and every tablet server watch the node
(:class:`DynamicConfigWatcher`): each change is installed into the process's ``ServerConfig`` (the override wins
over ``server.yaml``) and the listeners of the changed keys run on the server's event loop, so the running
components pick the new value up without a restart. A server that starts reads the node before it starts its
loops, so an override survives restarts.

Only the options the registry marks ``dynamic`` (``fluss.server.config.SERVER_OPTIONS``) may be set or deleted;
everything else - an unknown key, a key that needs a restart, a bad value, an operation other than SET or DELETE -
is refused with ``INVALID_CONFIG_EXCEPTION`` naming the key and the reason, and nothing is stored.

``describe`` lists every server option that has a value on the coordinator with its source: the dynamic override
(``DYNAMIC_SERVER_CONFIG``), the coordinator's own configuration (``INITIAL_SERVER_CONFIG``) or the default
(``DEFAULT_CONFIG``); secrets (credentials, JAAS entries) are masked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from fluss.metadata import AlterConfigOpType
from fluss.options import config_error
from fluss.server.config import SERVER_OPTIONS, ServerConfig

log = logging.getLogger(__name__)

MASKED = "******"
_SECRET_MARKERS = ("secret", "password", "jaas", "session-token", "access-key", "token")


@dataclass(frozen=True)
class ConfigChange:
    key: str
    value: str | None
    op: int


def is_secret(key: str) -> bool:
    return any(marker in key.lower() for marker in _SECRET_MARKERS)


def apply_alter(current: Mapping[str, str], changes: Iterable[ConfigChange]) -> dict[str, str]:
    """The dynamic overrides after ``changes`` (applied in order to ``current``).

    Raises:
        FlussError: INVALID_CONFIG_EXCEPTION naming the first key that is unknown, not dynamic, or whose value is
            invalid, or an unsupported operation; nothing is to be stored then.
    """
    out = dict(current)
    changes = list(changes)
    if not changes:
        raise config_error("No configuration to alter: give at least one key")
    for change in changes:
        key = (change.key or "").strip()
        if not key:
            raise config_error("A configuration key is empty")
        option = SERVER_OPTIONS.get(key)
        if option is None:
            raise config_error(f"{SERVER_OPTIONS.unknown_key_message(key)}: it cannot be set")
        if not option.implemented:
            raise config_error(f"The server option '{key}' is not supported yet by this Fluss implementation")
        if not option.dynamic:
            dynamic = ", ".join(o.key for o in SERVER_OPTIONS if o.dynamic)
            raise config_error(f"The server option '{key}' cannot be changed while the cluster runs (it is read at "
                               f"start-up: set it in server.yaml and restart). Dynamic options: {dynamic}")
        if change.op == AlterConfigOpType.SET:
            if change.value is None:
                raise config_error(f"SET of '{key}' needs a value")
            value = str(change.value).strip()
            option.parse(value, "the cluster configuration")
            out[key] = value
        elif change.op == AlterConfigOpType.DELETE:
            out.pop(key, None)
        else:
            name = AlterConfigOpType(change.op).name if change.op in AlterConfigOpType._value2member_map_ \
                else str(change.op)
            raise config_error(f"Operation {name} of '{key}' is not supported (only SET and DELETE)")
    return out


@dataclass(frozen=True)
class ConfigEntryValue:
    key: str
    value: str | None
    source: str


def describe(config: ServerConfig) -> list[ConfigEntryValue]:
    """Every server option with a value in ``config`` (dynamic overrides included), sorted by key."""
    keys = {o.key for o in SERVER_OPTIONS if not o.is_pattern and o.implemented}
    keys |= {k for k in config.static() if SERVER_OPTIONS.get(k) is not None}
    keys |= set(config.dynamic)
    out = []
    for key in sorted(keys):
        value = config.get(key)
        source = config.source_of(key)
        if value is None or source is None:
            continue
        out.append(ConfigEntryValue(key, MASKED if is_secret(key) else value, source))
    return out


Listener = Callable[[set[str]], None]


class DynamicConfigWatcher:
    """Keeps a process's ``ServerConfig`` in step with ``/cluster_config`` and tells the components whose keys
    changed (see the module docstring). Listeners run on the event loop given to :meth:`start`."""

    def __init__(self, zk, config: ServerConfig) -> None:
        self._zk = zk
        self._config = config
        self._listeners: list[tuple[Callable[[str], bool], Listener]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.changed = asyncio.Event()  # set at each change (loops waiting out an interval wake up)

    def on_change(self, keys: Callable[[str], bool] | Iterable[str], listener: Listener) -> None:
        """Runs ``listener(changed keys)`` after a change of a key that ``keys`` selects (a predicate or a set)."""
        if not callable(keys):
            wanted = set(keys)
            self._listeners.append((lambda k: k in wanted, listener))
        else:
            self._listeners.append((keys, listener))

    async def load(self) -> None:
        """Installs the stored overrides now (before the server starts its components)."""
        overrides, _ = await asyncio.to_thread(self._zk.get_cluster_config)
        self.install(overrides)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Watches the node from now on (the first call of the watch only re-installs what :meth:`load` read)."""
        self._loop = loop
        self._zk.watch_cluster_config(self._from_zookeeper)

    def _from_zookeeper(self, overrides: dict[str, str]) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.install, overrides)

    def install(self, overrides: Mapping[str, str]) -> None:
        valid = {}
        for key, value in overrides.items():  # written by a coordinator that checked them; checked again here
            option = SERVER_OPTIONS.get(key)
            try:
                if option is None or not option.dynamic:
                    raise config_error(f"'{key}' is not a dynamic server option")
                option.parse(value, "the cluster configuration")
            except Exception as e:  # noqa: BLE001 - skip a value this server cannot use, keep the rest
                log.warning("ignoring the dynamic option %s=%r: %s", key, value, e)
                continue
            valid[key] = value
        changed = self._config.set_dynamic(valid)
        if not changed:
            return
        log.info("dynamic configuration changed: %s", ", ".join(
            f"{k}={MASKED if is_secret(k) else self._config.get(k)!r}" for k in sorted(changed)))
        self.changed.set()
        self.changed = asyncio.Event()
        for selects, listener in self._listeners:
            keys = {k for k in changed if selects(k)}
            if keys:
                try:
                    listener(keys)
                except Exception:  # noqa: BLE001 - one component's failure does not stop the others
                    log.exception("applying the dynamic options %s failed", sorted(keys))

    async def wait_interval(self, key: str, last_run: float) -> None:
        """Sleeps until the duration option ``key`` has passed since ``last_run`` (loop time), re-reading the
        option whenever the configuration changes; a value <= 0 waits for a change."""
        loop = asyncio.get_running_loop()
        while True:
            event = self.changed
            interval_s = self._config.get_duration_ms(key) / 1000
            if interval_s > 0:
                remaining = last_run + interval_s - loop.time()
                if remaining <= 0:
                    return
            else:
                remaining = None
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                return
