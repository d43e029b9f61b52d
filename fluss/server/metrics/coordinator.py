"""A coordinator's metrics: cluster gauges read from the active coordinator's context when the metrics are read,
and the event processor's queue size and timings.

A standby coordinator reports ``activeCoordinatorCount`` 0 and none of the cluster gauges (it has no current
view of the cluster); summed over all coordinators, ``activeCoordinatorCount`` is the number of active ones.
"""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections.abc import Callable, Iterator

from fluss.lake.config import is_lake_enabled
from fluss.metrics import catalog as c
from fluss.metrics.core import Histogram, MetricRegistry, Row


class CoordinatorMetrics:
    """``processor()`` returns the active ``CoordinatorEventProcessor`` (None on a standby)."""

    def __init__(self, registry: MetricRegistry, processor: Callable[[], object | None]) -> None:
        self.registry = registry
        self.processor = processor
        self.event_queue_time = registry.histogram(c.EVENT_QUEUE_TIME)
        self._processing: dict[str, Histogram] = {}
        registry.add_source(self.cluster_rows)

    def event_done(self, event_type: str, queued_ms: float, processing_ms: float) -> None:
        """Called by the event processor after each event (once per event, on the event loop)."""
        self.event_queue_time.update(queued_ms)
        hist = self._processing.get(event_type)
        if hist is None:
            hist = self._processing[event_type] = self.registry.histogram(c.EVENT_PROCESSING_TIME,
                                                                          event_type=event_type)
        hist.update(processing_ms)

    def cluster_rows(self) -> Iterator[Row]:
        processor = self.processor()
        yield c.ACTIVE_COORDINATOR_COUNT, {}, 0 if processor is None else 1
        if processor is None:
            return
        ctx = processor.ctx
        tables = list(ctx.tables_by_id.values())
        leaders = list(ctx.leaders.values())
        live = set(ctx.live_servers)
        yield c.ACTIVE_TABLET_SERVER_COUNT, {}, len(live)
        yield c.TABLE_COUNT, {}, len(tables)
        yield c.LAKE_TABLE_COUNT, {}, sum(1 for t in tables if is_lake_enabled(t))
        yield c.PARTITION_COUNT, {}, len(ctx.partitions)
        yield c.BUCKET_COUNT, {}, len(leaders)
        yield c.OFFLINE_BUCKET_COUNT, {}, sum(1 for lai, _ in leaders if lai.leader < 0 or lai.leader not in live)
        queued = Tally(event.handler.__name__.lstrip("_") for event in list(processor.queued_events()))
        for event_type in sorted(set(queued) | set(self._processing)):
            yield c.EVENT_QUEUE_SIZE, {"event_type": event_type}, queued.get(event_type, 0)
        now_ms = time.time() * 1000
        for table_id, (snapshot_id, commit_time) in list(ctx.lake_snapshots.items()):
            info = ctx.tables_by_id.get(table_id)
            if info is None:
                continue
            labels = {"database": info.table_path.database_name, "table": info.table_path.table_name}
            yield c.LAKE_SNAPSHOT_ID, labels, snapshot_id
            yield c.LAKE_FRESHNESS, labels, now_ms - commit_time if commit_time > 0 else -1
        for info in tables:
            if info.table_id not in ctx.lake_snapshots and is_lake_enabled(info):
                labels = {"database": info.table_path.database_name, "table": info.table_path.table_name}
                yield c.LAKE_SNAPSHOT_ID, labels, -1
                yield c.LAKE_FRESHNESS, labels, -1
