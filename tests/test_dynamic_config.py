"""Live cluster configuration without a cluster: which changes the coordinator accepts (fluss/server/dynamic_config.py),
how a server's configuration layers the overrides, and how the watcher wakes loops and tells components."""

from __future__ import annotations

import asyncio
import json

import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import AlterConfig, AlterConfigOpType
from fluss.options_export import registry_json
from fluss.server.config import SERVER_OPTIONS, ServerConfig
from fluss.server.dynamic_config import ConfigChange, DynamicConfigWatcher, apply_alter, describe

SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE


def _refused(changes, *words: str, current=None) -> str:
    with pytest.raises(FlussError) as err:
        apply_alter(current or {}, changes)
    assert err.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION
    for word in words:
        assert word in err.value.message, err.value.message
    return err.value.message


def test_set_and_delete_of_dynamic_options():
    current = {"kv.snapshot.interval": "1min"}
    updated = apply_alter(current, [ConfigChange("log.replica.catch-up-throttle", " 10mb ", SET),
                                    ConfigChange("kv.snapshot.interval", None, DELETE),
                                    ConfigChange("datalake.format", "paimon", SET),
                                    ConfigChange("datalake.paimon.warehouse", "/tmp/wh", SET)])
    assert updated == {"log.replica.catch-up-throttle": "10mb", "datalake.format": "paimon",
                       "datalake.paimon.warehouse": "/tmp/wh"}
    assert current == {"kv.snapshot.interval": "1min"}  # the input is not changed
    assert apply_alter({}, [ConfigChange("kv.snapshot.interval", None, DELETE)]) == {}  # nothing to delete: fine


def test_unknown_non_dynamic_and_invalid_changes_are_refused_naming_the_key():
    msg = _refused([ConfigChange("kv.snapshot.intervall", "1s", SET)], "kv.snapshot.intervall", "Unknown")
    assert "did you mean 'kv.snapshot.interval'" in msg
    _refused([ConfigChange("default.bucket.number", "3", SET)], "default.bucket.number", "restart",
             "kv.snapshot.interval")
    _refused([ConfigChange("kv.snapshot.interval", "soon", SET)], "kv.snapshot.interval", "soon")
    _refused([ConfigChange("log.replica.catch-up-throttle", "0", SET)], "log.replica.catch-up-throttle", "at least")
    _refused([ConfigChange("datalake.format", "iceberg", SET)], "datalake.format", "not supported yet")
    _refused([ConfigChange("kv.snapshot.interval", None, SET)], "kv.snapshot.interval", "needs a value")
    _refused([ConfigChange("kv.snapshot.interval", "1s", AlterConfigOpType.APPEND)], "APPEND", "SET and DELETE")
    _refused([ConfigChange("kv.snapshot.interval", "1s", 9)], "Operation 9")
    _refused([], "at least one")
    # one bad change fails the whole request: the good change before it is not kept either
    _refused([ConfigChange("kv.snapshot.interval", "1s", SET), ConfigChange("data.dir", "/x", SET)], "data.dir")


def test_dynamic_options_are_marked_in_the_registry_and_its_export():
    dynamic = {o.key for o in SERVER_OPTIONS if o.dynamic}
    assert {"datalake.format", "datalake.paimon.*", "kv.snapshot.interval", "remote.log.task-interval-duration",
            "log.replica.catch-up-throttle"} <= dynamic
    assert "data.dir" not in dynamic and "zookeeper.address" not in dynamic
    exported = {o["key"]: o for o in json.loads(registry_json())["server_options"]}
    assert exported["kv.snapshot.interval"]["dynamic"] is True
    assert "dynamic" not in exported["data.dir"]


def test_overrides_win_over_the_server_configuration_and_describe_names_the_source():
    config = ServerConfig({"kv.snapshot.interval": "5min", "s3.secret-key": "hush", "data.dir": "/d"})
    assert config.get_duration_ms("kv.snapshot.interval") == 300_000
    assert config.set_dynamic({"kv.snapshot.interval": "2s", "log.replica.catch-up-throttle": "1mb"}) == {
        "kv.snapshot.interval", "log.replica.catch-up-throttle"}
    assert config.get_duration_ms("kv.snapshot.interval") == 2000
    assert config.as_dict()["kv.snapshot.interval"] == "2s"
    entries = {e.key: e for e in describe(config)}
    assert (entries["kv.snapshot.interval"].value, entries["kv.snapshot.interval"].source) == (
        "2s", "DYNAMIC_SERVER_CONFIG")
    assert entries["data.dir"].source == "INITIAL_SERVER_CONFIG"
    assert (entries["log.retention.check-interval"].value, entries["log.retention.check-interval"].source) == (
        "5min", "DEFAULT_CONFIG")
    assert entries["s3.secret-key"].value == "******"
    assert "tablet-server.rack" not in entries  # no value: not listed
    assert config.set_dynamic({"log.replica.catch-up-throttle": "1mb"}) == {"kv.snapshot.interval"}
    assert config.get("kv.snapshot.interval") == "5min" and config.source_of("kv.snapshot.interval") == \
        "INITIAL_SERVER_CONFIG"
    # an override equal to the value in force changes nothing a component would see
    assert config.set_dynamic({"log.replica.catch-up-throttle": "1mb", "kv.snapshot.interval": "5min"}) == set()


def test_alter_config_on_the_wire():
    msg = AlterConfig("kv.snapshot.interval", "1s").to_pb()
    assert (msg.key, msg.value, msg.op_type) == ("kv.snapshot.interval", "1s", 0)
    assert not AlterConfig("kv.snapshot.interval", op_type=AlterConfigOpType.DELETE).to_pb().HasField("value")


class _FakeZooKeeper:
    def __init__(self, stored: dict[str, str]) -> None:
        self.stored = stored
        self.watch = None

    def get_cluster_config(self):
        return dict(self.stored), 0

    def watch_cluster_config(self, callback):
        self.watch = callback
        callback(dict(self.stored))


async def test_watcher_installs_overrides_tells_listeners_and_wakes_interval_waits():
    config = ServerConfig({"kv.snapshot.interval": "1h"})
    zk = _FakeZooKeeper({"kv.snapshot.interval": "1h", "data.dir": "/ignored", "log.replica.catch-up-throttle": "x"})
    watcher = DynamicConfigWatcher(zk, config)
    seen: list[set[str]] = []
    watcher.on_change({"kv.snapshot.interval"}, seen.append)
    await watcher.load()
    assert config.dynamic == {"kv.snapshot.interval": "1h"}  # a non-dynamic key or a bad value is skipped
    loop = asyncio.get_running_loop()
    watcher.start(loop)
    started = loop.time()
    waiter = asyncio.create_task(watcher.wait_interval("kv.snapshot.interval", started))
    await asyncio.sleep(0.05)
    assert not waiter.done()  # an hour to go
    zk.watch({"kv.snapshot.interval": "100ms"})  # from kazoo's thread in real life: queued onto the loop
    await asyncio.wait_for(waiter, 2)
    assert loop.time() - started < 1
    assert seen == [{"kv.snapshot.interval"}]
    zk.watch({"kv.snapshot.interval": "100ms"})  # the same value again: no listener call
    await asyncio.sleep(0.05)
    assert seen == [{"kv.snapshot.interval"}]
