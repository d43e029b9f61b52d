"""``fluss dashboard`` against the shared cluster: its JSON API, and its pages in a headless Chromium (they load
without console errors, show the tables the test created, and update as data arrives)."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from dashboard_helpers import get_json, screenshot
from selenium.webdriver.common.by import By

import fluss

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


async def _table(conn, database: str, name: str, buckets: int, pk: bool = False) -> fluss.TablePath:
    path = fluss.TablePath(database, name)
    schema = fluss.Schema(SCHEMA, primary_keys=["id"]) if pk else fluss.Schema(SCHEMA)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        schema, bucket_count=buckets, properties={"table.replication.factor": "2"}))
    return path


async def _append(conn, path: fluss.TablePath, start: int, n: int) -> None:
    writer = (await conn.get_table(path)).new_append().create_writer()
    writer.write_arrow_batch(pa.record_batch([pa.array(range(start, start + n), pa.int64()),
                                              pa.array([f"n{i}" for i in range(start, start + n)])], schema=SCHEMA))
    await writer.flush()


def _wait(predicate, timeout_s: float = 20.0, what: str = "the page"):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception:  # noqa: BLE001 - the page is being re-rendered
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not show what was expected within {timeout_s}s")
        time.sleep(0.3)


def _console_errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


async def test_api_describes_the_cluster_and_a_table(cluster, conn, database, dashboard_url):
    path = await _table(conn, database, "events", buckets=3)
    await _append(conn, path, 0, 1200)
    overview = get_json(dashboard_url + "api/overview")
    assert [c["state"] for c in overview["coordinators"]] == ["active"]
    assert len(overview["tablet_servers"]) == 3
    assert all(s["metrics"] and s["zookeeper"] == "connected" for s in overview["tablet_servers"])
    assert overview["zookeeper"]["connected"] == overview["zookeeper"]["sessions"] == 4
    tables = get_json(dashboard_url + "api/tables")["tables"]
    assert any(t["database"] == database and t["table"] == "events" and t["buckets"] == 3 for t in tables)
    detail = get_json(dashboard_url + f"api/tables/{database}/events")
    assert detail["rows"] == 1200
    assert len(detail["buckets"]) == 3
    assert sum(b["end_offset"] for b in detail["buckets"]) == 1200
    assert all(len(b["replicas"]) == 2 and b["leader"] in b["replicas"] for b in detail["buckets"])

    def produced() -> float:  # the chart's records/s over its intervals add up to the records written meanwhile
        series = get_json(dashboard_url + "api/series")
        times = series["t"]
        return sum(r * (t1 - t0) for r, t0, t1 in zip(series["produce_records"][1:], times, times[1:], strict=False))

    _wait(lambda: produced() >= 1200 * 0.99, what="the produce series")
    with pytest.raises(Exception, match="404"):
        get_json(dashboard_url + f"api/tables/{database}/missing")


async def test_pages_load_show_the_tables_and_update(cluster, conn, database, dashboard_url, browser):
    log_path = await _table(conn, database, "clicks", buckets=4)
    pk_path = await _table(conn, database, "users", buckets=2, pk=True)
    await _append(conn, log_path, 0, 3000)
    upsert = (await conn.get_table(pk_path)).new_upsert().create_writer()
    for i in range(50):
        upsert.upsert({"id": i, "name": f"u{i}"})
    await upsert.flush()

    browser.get(dashboard_url)
    # every read of the page is retried: it re-renders itself each interval (an element can go stale)
    _wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, "[data-testid=server-row]")) == 3
          and browser.find_element(By.CSS_SELECTOR, "[data-card='tablet servers'] .value").text == "3"
          and browser.find_element(By.CSS_SELECTOR, "[data-testid=coordinator-row]").text.count("active") == 1,
          what="the overview")
    # the charts fill as the dashboard samples the servers' metrics
    _wait(lambda: int(browser.find_element(By.CSS_SELECTOR, "svg[data-chart=produce-records]")
                      .get_attribute("data-points")) >= 3, what="the produce chart")
    screenshot(browser, "overview")

    browser.get(dashboard_url + "#/tables")

    def clicks_row():
        return browser.find_element(By.CSS_SELECTOR, f"[data-table='{database}.clicks']")

    _wait(lambda: "log" in clicks_row().text
          and browser.find_elements(By.CSS_SELECTOR, f"[data-table='{database}.users']"), what="the table list")
    screenshot(browser, "tables")

    def open_clicks() -> bool:
        clicks_row().find_element(By.TAG_NAME, "a").click()
        return True

    _wait(open_clicks, what="the link to the table")
    _wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, "[data-testid=bucket-row]")) == 4, what="the buckets")

    def shown_end_offsets() -> int:
        cells = browser.find_elements(By.CSS_SELECTOR, "[data-testid=end-offset]")
        return sum(int(c.text.replace(",", "")) for c in cells)

    _wait(lambda: shown_end_offsets() == 3000, what="the end offsets")
    _wait(lambda: browser.find_element(By.CSS_SELECTOR, "[data-testid=rows]").text == "3,000", what="the rows")
    await _append(conn, log_path, 3000, 2000)  # the open page picks the new rows up by itself
    _wait(lambda: shown_end_offsets() == 5000, what="the updated end offsets")
    _wait(lambda: browser.find_element(By.CSS_SELECTOR, "[data-testid=rows]").text == "5,000", what="the row count")
    screenshot(browser, "table")

    browser.get(dashboard_url + f"#/table/{database}/users")
    _wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, "[data-testid=bucket-row]")) == 2, what="the PK table")
    _wait(lambda: browser.find_element(By.CSS_SELECTOR, "[data-testid=rows]").text == "50", what="the PK rows")
    assert "KV snapshot" in browser.page_source
    assert _console_errors(browser) == []
