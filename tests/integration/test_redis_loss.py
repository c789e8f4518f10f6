"""`scrapy crawl web` when its Redis dies mid-crawl (SIGKILL, by PID): the crawl stops
by itself with reason redis_unavailable and one line naming the lost node, and no
traceback anywhere in its log; started again soon enough (its AOF kept), the crawl rides
through and loses nothing."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from scripts.crawlrun import (
    CrawlResult,
    per_ip_violations,
    read_items,
    start_crawl,
    wait_crawl,
    write_seeds,
)
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.redis_cluster import LocalRedis
from tests.integration.test_gates import stats_of


def slow_web() -> WebSpec:
    names = ["one", "two", "three", "four"]
    return WebSpec(hosts=[HostSpec(f"{n}.test", pages=30, latency_ms=50) for n in names])


def _kill_mid_crawl(
    tmp_path: Path, web: TestWeb, server: LocalRedis, **extra: object
) -> subprocess.Popen[str]:
    """Start a crawl of `web` on `server`, and SIGKILL the server after 12 requests."""
    seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
    settings = {
        "DNS_HOSTS_MAP": web.hosts_map_setting(),
        "FRONTIER_DELAY": 0.3,
        "REDIS_URL": server.url,
        **extra,
    }
    proc = start_crawl(seeds, tmp_path / "data", settings, tmp_path / "items.jsonl")
    deadline = time.monotonic() + 60
    while len(web.requests()) < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    server.kill()
    return proc


def test_a_crawl_whose_redis_is_killed_stops_with_one_line(tmp_path: Path) -> None:
    server = LocalRedis(tmp_path / "redis").start()
    try:
        with TestWeb(slow_web(), lifetime=180) as web:
            proc = _kill_mid_crawl(tmp_path, web, server, FRONTIER_MAX_REDIS_FAILURES=3)
            fetched_at_kill = len(web.requests())
            _, log = wait_crawl(proc, 120)
    finally:
        server.stop()
    assert fetched_at_kill >= 12 and fetched_at_kill < len(web.pages), log[-3000:]
    assert proc.returncode == 1, log[-3000:]  # a crawl that did not finish fails
    assert "Traceback" not in log, log[-6000:]
    assert "Spider closed (redis_unavailable)" in log, log[-3000:]
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) <= 2, "\n".join(errors)  # the reason, and what close() could not do
    assert f"127.0.0.1:{server.port}" in errors[0], errors
    assert "Redis unavailable" in errors[0] and "closing the crawl" in errors[0], errors


def test_a_crawl_whose_redis_restarts_rides_through_and_loses_nothing(tmp_path: Path) -> None:
    # Killed (SIGKILL) and started again 10 s later on its AOF (fsync always): the
    # frontier retries its steps (5 s apart, FRONTIER_MAX_REDIS_FAILURES 10), and the
    # re-crawl state of the pages in the pipelines at the kill or at the restart (stale
    # pooled connections, a Redis loading its data) is written on a later try. Before,
    # such pages were stored without re-crawl state: 2 of 157 in a 30 s outage.
    aof = ("--appendonly", "yes", "--appendfsync", "always")
    server = LocalRedis(tmp_path / "redis", options=aof).start()
    try:
        with TestWeb(slow_web(), lifetime=180) as web:
            proc = _kill_mid_crawl(tmp_path, web, server)
            time.sleep(10)
            server.start()
            _, log = wait_crawl(proc, 150)
            requests = web.requests()
    finally:
        server.stop()
    assert proc.returncode == 0, log[-3000:]
    stored = {item["url"] for item in read_items(tmp_path / "items.jsonl")}
    assert set(web.pages) <= stored, sorted(set(web.pages) - stored)
    stats = stats_of(CrawlResult(0, "", log, []))
    assert stats["frontier/redis_errors"] >= 2  # the outage was seen
    assert stats["recrawl/visits/new"] == len(stored)  # every page kept its state
    assert "not updated" not in log and "Traceback" not in log, log[-3000:]
    assert per_ip_violations(requests, 0.3, slack=0.005) == (1, [])
