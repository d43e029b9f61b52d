"""A real S3-compatible server on loopback for tests, benchmarks and ``make demo S3=1``: moto's server mode.

moto lives in its own virtualenv (``.venv-s3``, made by ``make setup`` from ``requirements-s3.lock``) so its pins
stay out of the project's; ``FLUSS_S3_SERVER`` may name another ``moto_server`` executable. The server keeps
objects in memory and accepts any credentials; it answers the S3 REST API (path-style addressing) on
``http://127.0.0.1:<port>``.

    with LocalS3Server() as s3:
        s3.create_bucket("fluss")
        options = s3.options()  # s3.endpoint, s3.access-key, s3.secret-key, s3.region, s3.path.style.access
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from fluss.fs import S3_ACCESS_KEY, S3_ENDPOINT, S3_PATH_STYLE_ACCESS, S3_REGION, S3_SECRET_KEY, s3_filesystem
from fluss.server.zk.local_server import free_port

ENV_VAR = "FLUSS_S3_SERVER"
ACCESS_KEY = "fluss-test-key"
SECRET_KEY = "fluss-test-secret"
REGION = "us-east-1"


def moto_server_executable() -> Path:
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[2] / ".venv-s3" / "bin" / "moto_server"


class LocalS3Server:
    def __init__(self, port: int | None = None, log_path: Path | None = None, owner_pid: int | None = None) -> None:
        self.port = port or free_port()
        self.log_path = log_path
        self.owner_pid = owner_pid  # if set, the server stops when this process dies
        self.process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def options(self, endpoint: str | None = None) -> dict[str, str]:
        """Fluss's ``s3.*`` options for this server (``endpoint`` overrides it, e.g. to go through a proxy)."""
        return {S3_ENDPOINT: endpoint or self.endpoint, S3_ACCESS_KEY: ACCESS_KEY, S3_SECRET_KEY: SECRET_KEY,
                S3_REGION: REGION, S3_PATH_STYLE_ACCESS: "true"}

    def start(self, timeout_s: float = 30.0) -> LocalS3Server:
        exe = moto_server_executable()
        if not exe.exists():
            raise RuntimeError(f"moto's S3 server is not installed at {exe}: run `make setup` (it creates .venv-s3)")
        command = [str(exe), "-H", "127.0.0.1", "-p", str(self.port)]
        if self.owner_pid is not None:
            command = [sys.executable, "-m", "fluss.server.parent_watch", str(self.owner_pid), "--", *command]
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115 - the child's
        try:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        finally:
            if self.log_path:
                out.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto_server exited with {self.process.returncode} (log: {self.log_path})")
            try:
                with urllib.request.urlopen(self.endpoint + "/", timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto_server did not answer on {self.endpoint} within {timeout_s}s")

    def create_bucket(self, name: str) -> None:
        fs = s3_filesystem(self.options())
        if not fs.exists(name):
            fs.call_s3("create_bucket", Bucket=name)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> LocalS3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
