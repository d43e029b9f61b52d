"""Scale curves (``make bench-scale``): how the cost of this project's Fluss grows with the work.

Each curve is measured against a real ``LocalCluster`` (ZooKeeper, a coordinator, tablet-server processes) with
the benchmark rows of ``bench.data``; ``python -m bench.scale`` writes ``bench/results/scale.json`` and the PNG
figures of ``docs/images/scale-*.png`` (see docs/benchmarks.md, "Scale curves"):

- ``buckets``: append and full-scan rows/s of one table of 3, 96, 384 buckets over 3 tablet servers;
- ``clients``: aggregate append and scan rows/s of 1 to 16 concurrent writers and readers, each its own process;
- ``create``: time to create a table of 1 to 1,024 buckets and one of 10 to 1,000 partitions, until the create call
  returns and until every bucket's leader answers;
- ``metadata``: p50/p99 of a metadata request as the cluster grows to 100 tables x 32 buckets, and the tablet
  servers' RSS against the buckets they host (MiB per bucket);
- ``kv``: single-key lookup p50/p99 and restart->serving time of a primary-key bucket of 100k to 10M keys.
"""
