"""The coordinator's lake-catalog worker process ends when the coordinator dies, even by SIGKILL.

A ``ProcessPoolExecutor`` worker holds both ends of its task queue, so it never sees its parent go: a coordinator
killed hard left its worker waiting for ever (found as a stray process after a test run). The worker now watches
its parent (``fluss.server.parent_watch``). Real processes: a child plays the coordinator, starts the worker and is
killed with SIGKILL by the PID this test started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from fluss.server.parent_watch import pid_alive

COORDINATOR = """
import os, sys, time
from fluss.lake.catalog import LakeCatalogProcess
catalog = LakeCatalogProcess({})
print(catalog._executor().submit(os.getpid).result(60), flush=True)
time.sleep(600)
"""


def test_the_catalog_worker_ends_when_its_coordinator_is_killed():
    coordinator = subprocess.Popen([sys.executable, "-c", COORDINATOR], stdout=subprocess.PIPE, text=True)
    worker = None
    try:
        worker = int(coordinator.stdout.readline())
        assert worker != coordinator.pid and pid_alive(worker)
        os.kill(coordinator.pid, signal.SIGKILL)
        coordinator.wait(10)
        deadline = time.monotonic() + 15
        while pid_alive(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(worker), f"the catalog worker {worker} outlived its killed coordinator"
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
            coordinator.wait(10)
        if worker is not None and pid_alive(worker):
            os.kill(worker, signal.SIGKILL)
