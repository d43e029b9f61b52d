"""Installs what the peers need, once, on a fresh Debian machine (``python -m bench.setup``; the suite calls it).

- Redis: Debian's ``redis-server`` through apt when the binary is missing.
- Kafka: ``org.apache.kafka:kafka_2.13`` and ``kafka-tools`` (see ``peers/kafka-pom.xml``) copied by Maven into
  ``bench/.peers/kafka/lib`` (gitignored) when that folder is empty.
- Apache Fluss: ``org.apache.fluss:fluss-server`` (``peers/apache-fluss-pom.xml``) into
  ``bench/.peers/apache-fluss/lib``, and the official Python client ``pyfluss`` in its own venv
  ``bench/.peers/pyfluss-venv`` (its ``import fluss`` would clash with this project's).
Each step returns None when ready, else the reason it is not, so the suite can report "not run (reason)".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
PEERS_DIR = BENCH_DIR / ".peers"
KAFKA_POM = BENCH_DIR / "peers" / "kafka-pom.xml"
KAFKA_LIB = PEERS_DIR / "kafka" / "lib"
APACHE_FLUSS_POM = BENCH_DIR / "peers" / "apache-fluss-pom.xml"
APACHE_FLUSS_LIB = PEERS_DIR / "apache-fluss" / "lib"
PYFLUSS_VENV = PEERS_DIR / "pyfluss-venv"
PYFLUSS_REQUIREMENT = "pyfluss==1.0.0"
INSTALL_TIMEOUT_S = 600


def _run(cmd: list[str], timeout_s: float = INSTALL_TIMEOUT_S) -> str | None:
    """Runs an install command; None on success, else a one-line reason."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{' '.join(cmd[:3])}: {e}"
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"{' '.join(cmd[:3])} exited {proc.returncode}: {tail[0][:200]}"
    return None


def ensure_redis() -> str | None:
    """Makes ``redis-server`` available (apt-get install on Debian when missing)."""
    if shutil.which("redis-server"):
        return None
    if not shutil.which("apt-get"):
        return "redis-server is missing and apt-get is not available"
    err = _run(["apt-get", "install", "-y", "-qq", "redis-server"])
    if err:  # the package lists may be stale on a fresh machine
        err = _run(["apt-get", "update", "-qq"]) or _run(["apt-get", "install", "-y", "-qq", "redis-server"])
    return err or (None if shutil.which("redis-server") else "redis-server still missing after apt-get install")


def ensure_kafka() -> str | None:
    """Resolves the Kafka broker and perf tools into ``bench/.peers/kafka/lib`` with Maven when missing."""
    if KAFKA_LIB.is_dir() and any(KAFKA_LIB.glob("kafka_2.13-*.jar")):
        return None
    if not shutil.which("java") or not shutil.which("mvn"):
        return "java or mvn is not installed"
    KAFKA_LIB.mkdir(parents=True, exist_ok=True)
    return _run(["mvn", "-q", "-B", "-f", str(KAFKA_POM), "dependency:copy-dependencies",
                 f"-DoutputDirectory={KAFKA_LIB}"])


def ensure_apache_fluss() -> str | None:
    """Resolves Apache Fluss's server jar with Maven and installs pyfluss into its own venv, when missing."""
    if not (APACHE_FLUSS_LIB.is_dir() and any(APACHE_FLUSS_LIB.glob("fluss-server-*.jar"))):
        if not shutil.which("java") or not shutil.which("mvn"):
            return "java or mvn is not installed"
        APACHE_FLUSS_LIB.mkdir(parents=True, exist_ok=True)
        err = _run(["mvn", "-q", "-B", "-f", str(APACHE_FLUSS_POM), "dependency:copy-dependencies",
                    f"-DoutputDirectory={APACHE_FLUSS_LIB}"])
        if err:
            return err
    python = PYFLUSS_VENV / "bin" / "python"
    if not (python.exists() and any(PYFLUSS_VENV.glob("lib/python*/site-packages/pyfluss-*.dist-info"))):
        err = _run([sys.executable, "-m", "venv", "--clear", str(PYFLUSS_VENV)]) or \
            _run([str(python), "-m", "pip", "install", "-q", PYFLUSS_REQUIREMENT, "numpy"])
        if err:
            return err
    return None


def main() -> None:
    for name, step in (("redis", ensure_redis), ("kafka", ensure_kafka), ("apache-fluss", ensure_apache_fluss)):
        err = step()
        print(f"{name}: {'ready' if err is None else err}")


if __name__ == "__main__":
    main()
