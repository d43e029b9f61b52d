# Two commands do all the set-up on a fresh Debian machine: `make demo` and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-stamp
# Debian packages: ZooKeeper for the servers, tmux for the interactive shell's tests, Prometheus for the metrics
# tests, Chromium and its driver for the dashboard's browser tests (those tests fail, not skip, without them).
APT_PACKAGES := zookeeper tmux prometheus chromium chromium-driver
# A real S3 API on loopback for tests and `make demo S3=1`: moto's server, in its own virtualenv (its pins stay
# out of the project's).
S3_VENV := .venv-s3
S3_STAMP := $(S3_VENV)/.setup-stamp

.PHONY: apt-packages setup demo test test-long bench bench-full bench-scale chaos fuzz remote-long lint proto options clean sql-client-jars

setup: apt-packages $(STAMP) $(S3_STAMP)

$(S3_STAMP): requirements-s3.lock
	test -x $(S3_VENV)/bin/python || python3.11 -m venv $(S3_VENV)
	$(S3_VENV)/bin/python -m pip install -q --upgrade pip
	$(S3_VENV)/bin/python -m pip install -q -r requirements-s3.lock
	touch $(S3_STAMP)

apt-packages:
	@dpkg -s $(APT_PACKAGES) >/dev/null 2>&1 || (apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES))

# The Flink connector jar (Maven; rebuilt only when its sources or the shared .proto change).
CONNECTOR_JAR := connector/target/fluss-connector.jar
$(CONNECTOR_JAR): connector/pom.xml $(shell find connector/src -type f 2>/dev/null) $(wildcard fluss/rpc/proto/*.proto)
	command -v mvn >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven openjdk-17-jdk-headless)
	cd connector && mvn -q -B -Dstyle.color=never -DskipTests package

$(STAMP): requirements.lock pyproject.toml | apt-packages $(CONNECTOR_JAR)
	test -x $(PY) || python3.11 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.lock
	PYTHONWARNINGS=ignore $(PY) -m pip install -q --no-deps -e .  # no setuptools banner about editable installs
	$(MAKE) -s sql-client-jars
	touch $(STAMP)

# The PyFlink wheel's sql-client.sh needs the SQL gateway jar, which the wheel leaves out: fetch it into its opt/.
FLINK_VERSION = $(shell sed -n 's/^apache-flink==//p' requirements.lock)
PYFLINK_OPT = $(shell $(PY) -c 'import os, pyflink; print(os.path.join(os.path.dirname(pyflink.__file__), "opt"))')
sql-client-jars:
	test -f $(PYFLINK_OPT)/flink-sql-gateway-$(FLINK_VERSION).jar || (cd connector && mvn -q -B -Dstyle.color=never \
		dependency:copy -Dartifact=org.apache.flink:flink-sql-gateway:$(FLINK_VERSION) -DoutputDirectory=$(PYFLINK_OPT))

demo: setup
	$(PY) examples/demo.py $(if $(S3),--s3)

test: setup
	cd connector && mvn -q -B -Dstyle.color=never test
	$(PY) -m pytest -q --durations=40 tests

# The long checks kept out of `make test` (marked `long`: 1,000-bucket metrics, ...); `make test` runs a smaller
# version of each.
test-long: setup
	$(PY) -m pytest -q tests -m long

bench: setup
	$(PY) -m bench --quick

bench-full: setup
	$(PY) -m bench --full

# Scale curves (docs/benchmarks.md, "Scale curves"): bench/results/scale.json and docs/images/scale-*.png;
# SCALE_MODE=--full for the larger sizes (10M keys). `make test` runs the smallest sizes.
SCALE_MODE ?= --quick
bench-scale: setup
	$(PY) -m bench.scale $(SCALE_MODE)

# The nemesis suite (docs/reliability.md): faults for CHAOS_SECONDS (root gives it network namespaces and a
# small disk), then the checker; history and report in CHAOS_OUT. `make test` runs a short smoke of it.
CHAOS_SECONDS ?= 300
CHAOS_OUT ?= chaos-results
chaos: setup
	$(PY) -m reliability.chaos --duration $(CHAOS_SECONDS) --out $(CHAOS_OUT)

# The protocol fuzzer: FUZZ_REQUESTS random and mutated requests over every RPC; report in FUZZ_OUT.
FUZZ_REQUESTS ?= 20000
FUZZ_OUT ?= fuzz-results/report.json
fuzz: setup
	$(PY) -m reliability.fuzz --requests $(FUZZ_REQUESTS) --out $(FUZZ_OUT)

# The tiered log's long tests (marked `long`, so `make test-long` runs them too): its fault tests (leaders SIGKILLed while uploading,
# leadership moved during uploads, S3 unreachable for a while) and Flink reading a lake table on S3 with Paimon's
# Java reader; 3-10 minutes. `make test` leaves them out (pyproject's addopts) and runs smokes of them (a leader
# killed while it uploads; Flink reading a tiered log from S3).
remote-long: setup
	$(PY) -m pytest -q -m long tests/remote tests/flink/test_flink_tiered_log.py

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check . || true

proto: setup
	$(PY) -m fluss.rpc.codegen

# The option registries as JSON for the Java connector (tests/test_table_options.py checks it is current).
options: setup
	$(PY) -m fluss.options_export

clean:
	rm -rf $(VENV) $(S3_VENV) build *.egg-info
