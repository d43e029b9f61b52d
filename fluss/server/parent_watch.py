"""Ties a process's life to its owner's: servers started by a ``LocalCluster`` stop when the program that
started them dies (a test runner killed hard must not leave a cluster running).

* ``watch_parent_in_background(pid)`` (in a server process): a daemon thread that sends this process SIGTERM —
  the normal graceful stop — once ``pid`` is gone.
* ``python -m fluss.server.parent_watch PID -- CMD ...``: a supervisor for programs we cannot change (the
  ZooKeeper JVM): runs CMD, forwards SIGTERM/SIGINT to it, and terminates it once PID is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

ENV_VAR = "FLUSS_PARENT_PID"
POLL_S = 0.5
GRACE_S = 20


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def watch_parent_in_background(pid: int) -> None:
    def watch() -> None:
        while pid_alive(pid) and os.getppid() != 1:
            time.sleep(POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(GRACE_S)  # a graceful stop that cannot finish (its ZooKeeper is gone too) ends here
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def watch_from_environment() -> None:
    """Starts the watchdog if the ``FLUSS_PARENT_PID`` environment variable names an owner."""
    value = os.environ.get(ENV_VAR)
    if value and value.isdigit():
        watch_parent_in_background(int(value))


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m fluss.server.parent_watch PID -- CMD [ARGS...]", file=sys.stderr)
        return 2
    owner = int(argv[0])
    child = subprocess.Popen(argv[2:])

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while child.poll() is None:
        if not pid_alive(owner):
            child.terminate()
            try:
                child.wait(15)
            except subprocess.TimeoutExpired:
                child.kill()
            break
        time.sleep(POLL_S)
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
