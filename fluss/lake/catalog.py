"""The coordinator's door to the data lake: a lake catalog chosen by ``datalake.format``, run out of process.

When a lake-enabled table is created, the coordinator has its lake table created first (as Fluss's coordinator
does through its lake catalog plugin) and records the lake's options in the table's properties, so clients and
the tiering job find the lake from the table alone. A lake format is a class registered under its name in
``LAKE_CATALOGS`` (``"paimon"`` → ``fluss.lake.paimon.PaimonLakeCatalog``), loaded by name: the coordinator's
code never imports a lake format. :class:`LakeCatalogProcess` runs the catalog in one worker process, started on
first use and kept for the next tables, so the coordinator process never loads the lake library (pypaimon, its
native dependencies): a lake that misbehaves cannot take the coordinator down, and a cluster without lake tables
never pays for it. A call is bounded by ``timeout_s``; a worker that died is replaced at the next call.

A lake catalog implements ``create_table(info) -> None`` (creating or reusing the lake table, raising
``FlussError`` with a clear code, e.g. ``LAKE_TABLE_ALREADY_EXIST``) and ``add_columns(info, first_new)``
(ALTER TABLE ADD: the columns of ``info`` from ``first_new`` on) and is constructed from the server options.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import logging
import multiprocessing
import os
from collections.abc import Mapping
from typing import Protocol

from fluss.errors import ErrorCode, FlussError
from fluss.lake.config import lake_format, table_lake_properties
from fluss.metadata import TableInfo
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.parent_watch import watch_parent_in_background

log = logging.getLogger(__name__)

#: Lake format name → "module:class" of its catalog.
LAKE_CATALOGS = {"paimon": "fluss.lake.paimon:PaimonLakeCatalog"}

CREATE_TABLE_TIMEOUT_S = 120.0


class LakeCatalog(Protocol):
    def create_table(self, info: TableInfo) -> None: ...

    def add_columns(self, info: TableInfo, first_new: int) -> None: ...


def load_lake_catalog(server_options: Mapping[str, str]) -> LakeCatalog:
    """The catalog of the cluster's ``datalake.format`` (imports its module: call it in the worker)."""
    fmt = lake_format(server_options)
    target = LAKE_CATALOGS.get(fmt or "")
    if target is None:
        raise FlussError(f"datalake.format is {fmt!r}: supported lake formats are {', '.join(LAKE_CATALOGS)}",
                         ErrorCode.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION)
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)(server_options)


def _create_in_worker(server_options: dict[str, str], info_bytes: bytes, first_new: int = -1) -> tuple[int, str]:
    """Runs in the worker process: (0, "") or the error's (code, message) (a FlussError keeps its code this way).
    ``first_new`` >= 0: add the columns from that index on instead of creating the table."""
    try:
        info = TableInfo.from_pb(pb.TableInfoPb.FromString(info_bytes))
        catalog = load_lake_catalog(server_options)
        if first_new >= 0:
            catalog.add_columns(info, first_new)
        else:
            catalog.create_table(info)
        return ErrorCode.NONE, ""
    except FlussError as e:
        return e.error_code, e.message
    except Exception as e:  # noqa: BLE001 - the lake library's own errors: their text is the lake's
        logging.getLogger(__name__).exception("creating the lake table failed")
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"The lake catalog failed: {type(e).__name__}: {e}"


def _load_in_worker(server_options: dict[str, str]) -> None:
    """Runs in the worker process: imports the lake format's library ahead of the first table."""
    load_lake_catalog(server_options)


class LakeCatalogProcess:
    """The lake catalog of one coordinator, in a worker process (see the module docstring)."""

    def __init__(self, server_options: Mapping[str, str], timeout_s: float = CREATE_TABLE_TIMEOUT_S) -> None:
        self.server_options = {k: str(v) for k, v in server_options.items()}
        self.timeout_s = timeout_s
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    @property
    def configured(self) -> bool:
        return lake_format(self.server_options) is not None

    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            # the worker stops when this process dies, however it dies (a pool worker holds both ends of its task
            # queue, so it would otherwise wait for work for ever after a SIGKILL of the coordinator)
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=watch_parent_in_background, initargs=(os.getpid(),))
        return self._pool

    def warm_up(self) -> None:
        """Starts the worker and loads the lake library in it now, so the first lake table is created without
        that wait (a failure here is only logged: ``create_table`` reports it)."""
        if not self.configured:
            return
        future = self._executor().submit(_load_in_worker, self.server_options)

        def report(f: concurrent.futures.Future) -> None:
            if not f.cancelled() and f.exception() is not None:
                log.warning("the lake catalog did not load: %s", f.exception())

        future.add_done_callback(report)

    async def create_table(self, info: TableInfo) -> dict[str, str]:
        """Creates (or reuses) the lake table of ``info``; returns the table properties that record the lake."""
        await self._run(info, -1, "create the lake table")
        return table_lake_properties(self.server_options)

    async def add_columns(self, info: TableInfo, first_new: int) -> None:
        """ALTER TABLE ADD of a lake-enabled table: the lake table gets the columns from ``first_new`` on."""
        await self._run(info, first_new, "add the columns to the lake table")

    async def _run(self, info: TableInfo, first_new: int, what: str) -> None:
        if not self.configured:
            raise FlussError(f"Table '{info.table_path}' has table.datalake.enabled=true but the cluster has no "
                             f"'datalake.format' configured", ErrorCode.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION)
        loop = asyncio.get_running_loop()
        try:
            code, message = await asyncio.wait_for(loop.run_in_executor(
                self._executor(), _create_in_worker, self.server_options, info.to_pb().SerializeToString(),
                first_new), self.timeout_s)
        except (concurrent.futures.process.BrokenProcessPool, TimeoutError) as e:
            self.close()  # a fresh worker next time
            raise FlussError(f"The lake catalog did not {what} of '{info.table_path}' "
                             f"({'timed out' if isinstance(e, TimeoutError) else 'its process died'})",
                             ErrorCode.UNKNOWN_SERVER_ERROR) from None
        if code != ErrorCode.NONE:
            raise FlussError(message, code)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
