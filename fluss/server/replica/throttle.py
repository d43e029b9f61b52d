"""A byte-rate limit (token bucket) for the replication a leader serves to followers outside the ISR
(``log.replica.catch-up-throttle``): new replicas of a reassignment and followers that fell behind catch up at this
rate, all buckets of the server together, so copying a bucket does not starve client traffic or the in-sync
followers (which are never throttled: acks=all latency does not depend on it).

Up to one second's worth of bytes may be served at once; a batch larger than what is left is still served whole
(followers need whole batches) and the debt is paid by the next fetches, so the rate holds over time.
"""

from __future__ import annotations

import time


class ByteRateLimiter:
    def __init__(self, bytes_per_second: int, clock=time.monotonic) -> None:
        if bytes_per_second <= 0:
            raise ValueError(f"a byte rate must be positive, not {bytes_per_second}")
        self.rate = bytes_per_second
        self._clock = clock
        self._tokens = float(bytes_per_second)
        self._at = clock()

    def available(self) -> int:
        """Bytes that may be served now (0 while the limit is exceeded)."""
        now = self._clock()
        self._tokens = min(float(self.rate), self._tokens + (now - self._at) * self.rate)
        self._at = now
        return max(0, int(self._tokens))

    def consume(self, n: int) -> None:
        self._tokens -= n


def limiter_for(current: ByteRateLimiter | None, bytes_per_second: int | None) -> ByteRateLimiter | None:
    """The limiter after the option changed (it is dynamic): None when unset, ``current`` when its rate is the
    same (its tokens kept), else a new limiter at the new rate."""
    if not bytes_per_second:
        return None
    if current is not None and current.rate == bytes_per_second:
        return current
    return ByteRateLimiter(bytes_per_second)
