"""The client's one retry policy: what each error class does, back-off, deadline, attempts, the last error."""

from __future__ import annotations

import time

import pytest

from fluss.client.retry import (
    BACKOFF_CODES,
    REFRESH_CODES,
    FinalError,
    RetryAction,
    RetryPolicy,
    call_with_retry,
    classify,
)
from fluss.errors import RETRIABLE_CODES, ErrorCode, FlussError


@pytest.mark.parametrize("code", sorted(REFRESH_CODES))
def test_errors_of_a_moved_cluster_refresh_metadata(code):
    assert classify(FlussError("x", code)) is RetryAction.REFRESH


@pytest.mark.parametrize("code", sorted(BACKOFF_CODES))
def test_errors_of_a_busy_server_back_off(code):
    assert classify(FlussError("x", code)) is RetryAction.BACKOFF


@pytest.mark.parametrize("code", [ErrorCode.TABLE_NOT_EXIST, ErrorCode.INVALID_TABLE_EXCEPTION,
                                  ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.PARTITION_NOT_EXISTS,
                                  ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION, ErrorCode.CLIENT_ERROR])
def test_other_errors_fail_at_once(code):
    assert classify(FlussError("x", code)) is RetryAction.FAIL


def test_every_retriable_code_is_classified_and_a_final_error_never_is():
    assert RETRIABLE_CODES == REFRESH_CODES | BACKOFF_CODES
    assert classify(FinalError("bucket 9 does not exist", ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)) \
        is RetryAction.FAIL


def test_backoff_doubles_up_to_the_cap():
    policy = RetryPolicy(deadline_s=30)
    assert [policy.backoff_s(a) for a in (1, 2, 3, 4, 5, 6, 7)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_attempt_limit_surfaces_the_last_error():
    state = RetryPolicy(deadline_s=30, max_attempts=2).start("ProduceLog to bucket 0 of table 'db.t'")
    assert state.failed(FlussError("leader moved", ErrorCode.NOT_LEADER_OR_FOLLOWER)) is RetryAction.REFRESH
    assert state.failed(FlussError("isr short", ErrorCode.NOT_ENOUGH_REPLICAS_EXCEPTION)) is RetryAction.BACKOFF
    assert state.failed(FlussError("isr still short", ErrorCode.NOT_ENOUGH_REPLICAS_EXCEPTION)) is RetryAction.FAIL
    final = state.final_error()
    assert final.error_code == ErrorCode.NOT_ENOUGH_REPLICAS_EXCEPTION
    assert "after 3 attempts" in final.message and "isr still short" in final.message and "db.t" in final.message


async def test_deadline_ends_the_retries_with_the_last_error():
    calls = 0

    async def unreachable():
        nonlocal calls
        calls += 1
        raise FlussError(f"tablet server 127.0.0.1:1 unreachable (call {calls})", ErrorCode.NETWORK_EXCEPTION)

    refreshed = 0

    async def refresh():
        nonlocal refreshed
        refreshed += 1

    start = time.monotonic()
    with pytest.raises(FlussError) as e:
        await call_with_retry(unreachable, RetryPolicy(deadline_s=0.6), "Lookup on bucket 0", refresh)
    elapsed = time.monotonic() - start
    assert 0.55 <= elapsed < 2.0
    assert e.value.error_code == ErrorCode.NETWORK_EXCEPTION
    assert f"(call {calls})" in e.value.message and "request timeout" in e.value.message
    assert calls >= 3 and refreshed == calls - 1


async def test_a_final_error_is_raised_unchanged_and_a_gone_table_stops_the_retries():
    async def bad():
        raise FlussError("no such column", ErrorCode.INVALID_COLUMN_PROJECTION)

    with pytest.raises(FlussError) as e:
        await call_with_retry(bad, RetryPolicy(deadline_s=5), "FetchLog")
    assert e.value.message == "no such column"

    async def moved():
        raise FlussError("not the leader", ErrorCode.NOT_LEADER_OR_FOLLOWER)

    async def dropped():
        raise FlussError("Table 'db.t' (table id 3) was dropped", ErrorCode.TABLE_NOT_EXIST)

    start = time.monotonic()
    with pytest.raises(FlussError) as e:
        await call_with_retry(moved, RetryPolicy(deadline_s=30), "ProduceLog", dropped)
    assert e.value.error_code == ErrorCode.TABLE_NOT_EXIST and time.monotonic() - start < 1


async def test_success_after_retries_returns_the_value():
    answers = [FlussError("x", ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION),
               FlussError("y", ErrorCode.REQUEST_TIME_OUT), 42]

    async def flaky():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert await call_with_retry(flaky, RetryPolicy(deadline_s=5), "ListOffsets") == 42
