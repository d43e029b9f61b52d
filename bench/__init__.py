"""Benchmark suite: every hot path of this project measured side by side with its raw limit and real peers.

``python -m bench --quick`` (``make bench``) and ``--full`` (``make bench-full``) run every family of scenarios in
one process, on one machine, in one run, so that the figures can be compared as ratios:

- ``raw``: what the machine itself can do with the same data (pyarrow IPC to a local file with fsync, rocksdict);
- ``fluss_log``: this project's log tables through the Python client against a real ``LocalCluster``;
- ``redis_peer`` / ``kafka_peer``: the same rows through Redis Streams and Apache Kafka (KRaft, single node);
- ``upstream``: whether Apache Fluss's own server jars and Python client resolve from the registries.

``runner`` turns the measurements into scenarios (median, spread, ratios, peak memory) and ``report`` prints the
table and writes ``bench/results/latest.json``. ``docs/benchmarks.md`` explains the method and every figure.
"""
