"""PyFlink's planner works only on the JVM thread that created its TableEnvironment; the session pins the test
thread's py4j calls to one JVM thread (fluss.flink.gateway), so a py4j call running in another Python thread
at the same time does not move the test's planning to a JVM thread the planner does not know."""

from __future__ import annotations

import threading

from fluss.flink.gateway import pin_gateway_to_current_thread


def _jvm_thread(gateway) -> str:
    return gateway.jvm.java.lang.Thread.currentThread().getName()


def test_planning_stays_on_the_environments_jvm_thread_while_another_thread_calls_the_jvm(batch_env):
    from pyflink.java_gateway import get_gateway

    gateway = get_gateway()
    sql = "SELECT id FROM (VALUES (1), (2), (3)) AS t(id) WHERE id > 1 LIMIT 1"
    before = _jvm_thread(gateway)
    assert "Limit" in batch_env.explain_sql(sql)

    started = threading.Event()
    other: list[str] = []

    def busy_elsewhere() -> None:  # holds a gateway connection for a while, so the pool has to open another one
        other.append(_jvm_thread(gateway))
        started.set()
        gateway.jvm.java.lang.Thread.sleep(1500)

    worker = threading.Thread(target=busy_elsewhere, name="busy-elsewhere")
    worker.start()
    assert started.wait(30)
    try:
        assert _jvm_thread(gateway) == before
        assert "Limit" in batch_env.explain_sql(sql)  # NullPointerException: metadataHandlerProvider unpinned
    finally:
        worker.join()
    assert other and other[0] != before
    with batch_env.execute_sql("SELECT COUNT(*) FROM (VALUES (1), (2), (3)) AS t(id) WHERE id > 1").collect() as it:
        assert [tuple(r) for r in it] == [(2,)]


def test_pinning_is_idempotent_for_the_owner_and_refused_for_another_thread(batch_env):
    pin_gateway_to_current_thread()  # the session already pinned this thread: nothing changes
    errors: list[BaseException] = []

    def pin_from_elsewhere() -> None:
        try:
            pin_gateway_to_current_thread()
        except RuntimeError as e:
            errors.append(e)

    worker = threading.Thread(target=pin_from_elsewhere)
    worker.start()
    worker.join()
    assert len(errors) == 1 and "already pinned" in str(errors[0])
