"""The web dashboard: a cluster's servers, coordinators and ZooKeeper sessions, its tables and partitions with the
state of every bucket (leader, ISR, offsets, sizes, KV snapshot age, tiering lag and lake snapshot), and live charts
of produce/fetch rates and request latency from the servers' metrics.

* ``sampler`` - scrapes every server's Prometheus endpoint and keeps the history the charts show.
* ``views`` - what each page shows, as JSON.
* ``app`` - the ASGI application (Starlette) and its static pages (``static/``: no build step).
* ``command`` - ``fluss dashboard --bootstrap-servers HOST:PORT --port 8081``.

The REST gateway mounts the same application at ``/dashboard``.
"""
