"""Benchmark suite: every hot path of this project measured side by side with its raw limit and real peers.

``python -m bench --quick`` (``make bench``) and ``--full`` (``make bench-full``) run every family of scenarios in
one process, on one machine, in one run, so that the figures can be compared as ratios:

- ``raw``: what the machine itself can do with the same data (pyarrow IPC to a local file with fsync, rocksdict);
- ``fluss_log`` / ``fluss_kv``: this project's log and primary-key tables through the Python client against a
  real ``LocalCluster``;
- ``fluss_recovery``: how long a killed and restarted tablet server takes to serve a primary-key bucket again;
- ``lake_tiering``: tiering into Paimon (throughput next to pypaimon, freshness lag of the continuous PyFlink job);
- ``flink_sql``: Flink SQL jobs through the connector jar next to Flink's own datagen/blackhole connectors;
- ``redis_peer`` / ``kafka_peer`` / ``kafka_rf3``: the same rows through Redis Streams and Apache Kafka (KRaft, a
  single node, and 3 brokers for RF=3);
- ``upstream``: Apache Fluss itself (its server jars from Maven Central, its Python client from PyPI).

``runner`` turns the measurements into scenarios (median, spread, ratios, peak memory) and ``report`` prints the
table and writes ``bench/results/latest.json``. ``docs/benchmarks.md`` explains the method and every figure.
"""
