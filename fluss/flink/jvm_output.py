"""Where the PyFlink JVM's standard error goes in the ``fluss`` commands.

PyFlink starts its JVM with ``stderr=PIPE`` and never reads the pipe: the JVM's warnings are lost, and once 64 KiB
of them pile up every JVM thread that writes to stderr blocks (a long ``fluss sql`` session would hang).
:func:`drain_gateway_stderr` makes the next JVM PyFlink starts in this process copy its stderr into a log file
(returned), read by a daemon thread. Call it before the first ``TableEnvironment`` is created.

:func:`quiet_jvm_logging` points the JVM's Log4j at ``log4j-quiet.properties`` (beside this module) unless
``LOG4J_PROPERTIES`` is set: PyFlink's own configuration prints every Hadoop INFO line (``CodecPool: Got
brand-new decompressor`` for each Paimon file read) on the console.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

_installed: Path | None = None


QUIET_LOG4J = Path(__file__).with_name("log4j-quiet.properties")


def quiet_jvm_logging() -> None:
    """Makes the PyFlink JVM started later in this process use :data:`QUIET_LOG4J` (unless set already)."""
    os.environ.setdefault("LOG4J_PROPERTIES", str(QUIET_LOG4J))


def jvm_log_path() -> Path:
    return Path(tempfile.gettempdir()) / f"fluss-pyflink-jvm-{os.getpid()}.log"


def drain_gateway_stderr(path: Path | None = None) -> Path:
    """Copies the stderr of the PyFlink JVM started after this call into ``path`` (default: a file named after
    this process in the temp directory); calling it again returns the path in use."""
    global _installed
    quiet_jvm_logging()
    if _installed is not None:
        return _installed
    import pyflink.java_gateway as java_gateway

    target = path or jvm_log_path()
    original = java_gateway.launch_gateway_server_process

    def launch(env, args):
        process = original(env, args)

        def drain() -> None:
            with open(target, "ab") as out:
                for chunk in iter(lambda: process.stderr.read1(65536), b""):
                    out.write(chunk)
                    out.flush()

        threading.Thread(target=drain, name="pyflink-jvm-stderr", daemon=True).start()
        return process

    java_gateway.launch_gateway_server_process = launch
    _installed = target
    return target
