"""Metrics with Apache Fluss's names, for servers and clients.

* ``catalog`` - every metric declared once (scope, name, type, labels, meaning); ``docs/metrics.md`` is made
  from it (``python -m fluss.metrics.docs``).
* ``core`` - the metric types (Counter, Meter, Histogram, gauges) and the registry; hot paths add to integers.
* ``prometheus`` - the Prometheus reporter (``prometheus_client``), on a port or a port range.
* ``reporters`` - reporters by name (``metrics.reporters``).
* ``scrape`` - reading a ``/metrics`` endpoint back (the dashboard, tests).

Servers build theirs in ``fluss.server.metrics``; a client connection in ``fluss.client.metrics``.
"""

from fluss.metrics.core import Counter, Histogram, Meter, MetricRegistry

__all__ = ["Counter", "Histogram", "Meter", "MetricRegistry"]
