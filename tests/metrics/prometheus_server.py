"""A real Prometheus (Debian's ``prometheus`` package) on loopback for tests: a generated config scraping the given
targets every second, its own storage directory, started and stopped by the test (by the PID it started)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

from fluss.server.zk.local_server import free_port

BINARY = "prometheus"


class PrometheusServer:
    def __init__(self, directory: Path, targets: dict[str, str], scrape_interval_s: int = 1) -> None:
        """``targets``: instance name -> ``host:port`` of a ``/metrics`` endpoint."""
        self.directory = Path(directory)
        self.targets = targets
        self.scrape_interval_s = scrape_interval_s
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> dict:
        interval = f"{self.scrape_interval_s}s"
        return {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "scrape_configs": [{
                "job_name": "fluss",
                "scrape_interval": interval,
                "scrape_timeout": interval,
                "static_configs": [{"targets": [address], "labels": {"server": name}}
                                   for name, address in sorted(self.targets.items())],
            }],
        }

    def start(self, timeout_s: float = 30.0) -> PrometheusServer:
        binary = shutil.which(BINARY)
        if binary is None:
            raise RuntimeError("Debian's 'prometheus' package is not installed (make setup installs it)")
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "prometheus.yml"
        config.write_text(yaml.safe_dump(self.config()))
        log = open(self.directory / "prometheus.log", "ab")  # noqa: SIM115 - owned by the child process
        self.process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={self.directory / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}; see "
                                   f"{self.directory / 'prometheus.log'}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"prometheus not ready after {timeout_s}s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ HTTP API

    def query(self, promql: str, at: float | None = None) -> list[dict]:
        """An instant query (at ``at``, unix seconds; default now): the result vector or matrix
        (``[{"metric": {...}, "value": [ts, "v"]}, ...]``, ``"values"`` for a range selector)."""
        params = {"query": promql} if at is None else {"query": promql, "time": f"{at:.3f}"}
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.loads(r.read())
        if body.get("status") != "success":
            raise AssertionError(f"query {promql!r} failed: {body}")
        return body["data"]["result"]

    def samples(self, selector: str, start: float, end: float) -> list[list[tuple[float, float]]]:
        """The raw samples of every series of ``selector`` stored between ``start`` and ``end`` (unix seconds)."""
        span = max(1, int(end - start + 0.999))
        result = self.query(f"{selector}[{span}s]", at=end)
        return [[(float(t), float(v)) for t, v in series["values"]] for series in result]

    def integral(self, selector: str, start: float, end: float) -> float:
        """The integral over [start, end] of a gauge summed over its series: each stored sample holds until the
        next one (or ``end``), so a missed scrape does not drop a second of it."""
        total = 0.0
        for series in self.samples(selector, start, end):
            for (t, v), (t_next, _) in zip(series, [*series[1:], (end, 0.0)], strict=True):
                total += v * (min(t_next, end) - t)
        return total

    def wait_until_scraped(self, at: float, timeout_s: float = 30.0) -> None:
        """Waits until every target has a sample at or after ``at`` (unix seconds)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            latest = [float(r["value"][1]) for r in self.query('timestamp(up{job="fluss"})')]
            if len(latest) == len(self.targets) and min(latest) >= at:
                return
            time.sleep(0.5)
        raise AssertionError(f"Prometheus has not scraped every target since {at} within {timeout_s}s")

    def scalar(self, promql: str) -> float | None:
        """The value of a query that yields one series (None when it yields none)."""
        result = self.query(promql)
        if not result:
            return None
        assert len(result) == 1, f"{promql!r} gave {len(result)} series: {result}"
        return float(result[0]["value"][1])

    def wait_for(self, promql: str, predicate, timeout_s: float = 30.0) -> float | None:
        """Polls ``promql`` until ``predicate(value)`` holds; returns the value (raises after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        value = None
        while time.monotonic() < deadline:
            value = self.scalar(promql)
            if value is not None and predicate(value):
                return value
            time.sleep(0.5)
        raise AssertionError(f"{promql!r} stayed at {value} for {timeout_s}s")

    def targets_up(self) -> dict[str, float]:
        return {r["metric"]["server"]: float(r["value"][1]) for r in self.query('up{job="fluss"}')}
