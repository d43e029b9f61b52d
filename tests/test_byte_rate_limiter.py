"""The catch-up byte-rate limit (fluss.server.replica.throttle) with a fake clock."""

from __future__ import annotations

import pytest

from fluss.server.replica.throttle import ByteRateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_second_of_bytes_at_once_then_the_rate():
    clock = Clock()
    limiter = ByteRateLimiter(1000, clock)
    assert limiter.available() == 1000
    limiter.consume(1000)
    assert limiter.available() == 0
    clock.now = 0.25
    assert limiter.available() == 250
    clock.now = 10.0  # idle time does not pile up beyond one second's worth
    assert limiter.available() == 1000


def test_an_oversized_batch_is_paid_back_before_more_is_served():
    clock = Clock()
    limiter = ByteRateLimiter(1000, clock)
    limiter.consume(3000)  # a whole batch larger than the allowance
    clock.now = 1.5
    assert limiter.available() == 0
    clock.now = 2.5
    assert limiter.available() == 500


def test_the_rate_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        ByteRateLimiter(0)


def test_a_changed_option_replaces_the_limiter_only_when_its_rate_changes():
    from fluss.server.replica.throttle import limiter_for

    first = limiter_for(None, 1000)
    assert first is not None and first.rate == 1000
    assert limiter_for(first, 1000) is first  # same rate: the tokens already spent stay spent
    faster = limiter_for(first, 5000)
    assert faster is not first and faster.rate == 5000
    assert limiter_for(faster, None) is None  # unset: no limit
