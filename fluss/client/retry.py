"""Retrying a request after refreshing metadata: one policy for every reader and writer of the client.

A failed request is classified by its error code (:func:`classify`):

* **REFRESH** - the cluster moved under the request (``NOT_LEADER_OR_FOLLOWER``, ``UNKNOWN_TABLE_OR_BUCKET``,
  ``LEADER_NOT_AVAILABLE``, ``FENCED_LEADER_EPOCH``, ``NETWORK_EXCEPTION`` from a server that went away,
  ``STORAGE_EXCEPTION`` from a leader that cannot write its disk):
  refresh the table's metadata, then try again, at its new leader.
* **BACKOFF** - the right server is busy or the ISR is short (``REQUEST_TIME_OUT``, ``NOT_ENOUGH_REPLICAS*``,
  ``CORRUPT_MESSAGE`` in transit, ``RETRIABLE_AUTHENTICATE``): wait, then try again.
* **FAIL** - anything else: the caller gets the error at once.

Waits grow from ``initial_backoff_s`` (50 ms), doubling, up to ``max_backoff_s`` (1 s). An operation gives up when it
has been retrying for longer than ``request-timeout`` (Fluss's ``client.request-timeout``, 30 s by default; timed from
its first attempt, for a write batch from its first failed send), or after ``max_attempts`` attempts
(``writer.retries`` for writes), and then raises its **last error**, saying how long it tried. A refresh that finds the table gone, or found under the same name with another table id (dropped and
re-created), ends every retry of that table with ``TABLE_NOT_EXIST`` (:func:`refresh_table`): a writer on a dropped
table fails instead of retrying for ever.

Callers: the append/upsert sender (per batch), the lookup sender (per bucket of keys), the log scanner (per bucket),
the KV snapshot scanner, and the admin's ``list_offsets`` / ``get_table_stats``. One operation uses
:func:`call_with_retry`; a batching sender keeps one :class:`RetryState` per batch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from fluss.errors import ErrorCode, FlussError, error_name
from fluss.metadata import TableInfo, TablePath

T = TypeVar("T")


class RetryAction(Enum):
    REFRESH = "refresh metadata, then retry"
    BACKOFF = "wait, then retry"
    FAIL = "fail"


REFRESH_CODES = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
    ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION,
    ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.STORAGE_EXCEPTION,  # the leader cannot write its disk: its leaderships move to other replicas
})
BACKOFF_CODES = frozenset({
    ErrorCode.REQUEST_TIME_OUT,
    ErrorCode.NOT_ENOUGH_REPLICAS_EXCEPTION,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION,
    ErrorCode.CORRUPT_MESSAGE,
    ErrorCode.RETRIABLE_AUTHENTICATE_EXCEPTION,
    ErrorCode.SCHEMA_NOT_EXIST,  # a batch of a schema id the server learns in a moment (ALTER TABLE ADD)
})
#: What a refresh may raise that means "this table (or partition) is gone": retrying cannot help.
GONE_CODES = frozenset({ErrorCode.TABLE_NOT_EXIST, ErrorCode.DATABASE_NOT_EXIST, ErrorCode.PARTITION_NOT_EXISTS})


class FinalError(FlussError):
    """An error no retry can fix, whatever its code (e.g. a bucket id the table does not have)."""

    @property
    def is_retriable(self) -> bool:
        return False


def classify(error: FlussError) -> RetryAction:
    if isinstance(error, FinalError):
        return RetryAction.FAIL
    if error.error_code in REFRESH_CODES:
        return RetryAction.REFRESH
    if error.error_code in BACKOFF_CODES:
        return RetryAction.BACKOFF
    return RetryAction.FAIL


@dataclass(frozen=True)
class RetryPolicy:
    """How long and how often an operation is retried (see the module docstring)."""

    deadline_s: float
    max_attempts: int | None = None
    initial_backoff_s: float = 0.05
    max_backoff_s: float = 1.0

    @classmethod
    def from_config(cls, config, max_attempts: int | None = None) -> RetryPolicy:
        """The policy of a client ``Config``: ``request-timeout`` bounds every retried operation."""
        return cls(deadline_s=config.request_timeout_ms / 1000, max_attempts=max_attempts)

    def backoff_s(self, attempt: int) -> float:
        """The wait before attempt ``attempt + 1`` (``attempt`` >= 1 attempts have failed)."""
        return min(self.max_backoff_s, self.initial_backoff_s * (2 ** max(0, attempt - 1)))

    def start(self, what: str, started: float | None = None) -> RetryState:
        """The retries of one operation, timed from ``started`` (``time.monotonic()``; default now)."""
        return RetryState(self, what, started)


class RetryState:
    """The retries of one operation (or one batch): attempts so far, the last error, the deadline."""

    __slots__ = ("policy", "what", "started", "attempts", "last_error")

    def __init__(self, policy: RetryPolicy, what: str, started: float | None = None) -> None:
        self.policy = policy
        self.what = what
        self.started = time.monotonic() if started is None else started
        self.attempts = 0
        self.last_error: FlussError | None = None

    @property
    def deadline(self) -> float:
        return self.started + self.policy.deadline_s

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def failed(self, error: FlussError) -> RetryAction:
        """Records a failed attempt; FAIL when the error is final or the deadline or attempts are used up."""
        self.attempts += 1
        self.last_error = error
        action = classify(error)
        if action is RetryAction.FAIL or self.expired():
            return RetryAction.FAIL
        if self.policy.max_attempts is not None and self.attempts > self.policy.max_attempts:
            return RetryAction.FAIL
        return action

    def delay_s(self) -> float:
        """The wait before the next attempt, never past the deadline."""
        return max(0.0, min(self.policy.backoff_s(self.attempts), self.deadline - time.monotonic()))

    def final_error(self) -> FlussError:
        """The last error, with how long it was retried (the error itself when it was not retriable)."""
        error = self.last_error or FlussError(f"{self.what} failed", ErrorCode.UNKNOWN_SERVER_ERROR)
        if classify(error) is RetryAction.FAIL or self.attempts <= 1 and not self.expired():
            return error
        elapsed = time.monotonic() - self.started
        limit = "the request timeout" if self.expired() else "the retry limit"
        return FlussError(f"{self.what} failed after {self.attempts} attempts in {elapsed:.1f}s ({limit}); last "
                          f"error: {error_name(error.error_code)}: {error.message}", error.error_code)


async def call_with_retry(operation: Callable[[], Awaitable[T]], policy: RetryPolicy, what: str,
                          refresh: Callable[[], Awaitable[object]] | None = None) -> T:
    """Runs ``operation`` until it succeeds, refreshing metadata (``refresh``) and backing off as classified.

    A refresh that finds the table gone raises at once (TABLE_NOT_EXIST, PARTITION_NOT_EXISTS); another failing
    refresh is only remembered (the next attempt runs on the metadata there is).
    """
    state = policy.start(what)
    while True:
        try:
            return await operation()
        except FlussError as e:
            action = state.failed(e)
        if action is RetryAction.FAIL:
            raise state.final_error()
        await asyncio.sleep(state.delay_s())
        if action is RetryAction.REFRESH and refresh is not None:
            try:
                await refresh()
            except FlussError as e:
                if e.error_code in GONE_CODES:
                    raise
                state.last_error = e


def table_gone(path: TablePath, table_id: int, found_id: int | None) -> FlussError:
    if found_id is None:
        return FlussError(f"Table '{path}' (table id {table_id}) was dropped", ErrorCode.TABLE_NOT_EXIST)
    return FlussError(f"Table '{path}' was dropped and re-created (table id {table_id} is now {found_id}): "
                      "get the table again to write or read the new one", ErrorCode.TABLE_NOT_EXIST)


async def refresh_table(client, table: TableInfo, partition_ids: Iterable[int] = ()) -> set[int]:
    """Refreshes the metadata of ``table`` (and its partitions ``partition_ids``) on ``client`` (a
    ``ClusterClient``); returns the partition ids that no longer exist.

    Raises:
        FlussError: TABLE_NOT_EXIST when the table was dropped, or dropped and re-created (another table id).
    """
    path = table.table_path
    try:
        await client.update_metadata([path])
    except FlussError as e:
        if e.error_code in (ErrorCode.TABLE_NOT_EXIST, ErrorCode.DATABASE_NOT_EXIST):
            raise table_gone(path, table.table_id, None) from None
        raise
    meta = client.tables[path]
    if meta.info.table_id != table.table_id:
        raise table_gone(path, table.table_id, meta.info.table_id)
    gone: set[int] = set()
    wanted = sorted(set(partition_ids))
    if wanted:
        try:
            await client.update_metadata([path], partition_ids=wanted)
        except FlussError as e:
            if e.error_code != ErrorCode.PARTITION_NOT_EXISTS:
                raise
            for pid in wanted:  # which ones are gone: ask one by one
                try:
                    await client.update_metadata([path], partition_ids=[pid])
                except FlussError as e2:
                    if e2.error_code != ErrorCode.PARTITION_NOT_EXISTS:
                        raise
                    gone.add(pid)
    return gone
