"""`scrapy crawl web` when its Redis dies mid-crawl (SIGKILL, by PID): the crawl stops
by itself with reason redis_unavailable and one line naming the lost node, and no
traceback anywhere in its log."""

from __future__ import annotations

import time
from pathlib import Path

from scripts.crawlrun import start_crawl, wait_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.redis_cluster import LocalRedis


def slow_web() -> WebSpec:
    names = ["one", "two", "three", "four"]
    return WebSpec(hosts=[HostSpec(f"{n}.test", pages=30, latency_ms=50) for n in names])


def test_a_crawl_whose_redis_is_killed_stops_with_one_line(tmp_path: Path) -> None:
    server = LocalRedis(tmp_path / "redis").start()
    try:
        with TestWeb(slow_web(), lifetime=180) as web:
            seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
            settings = {
                "DNS_HOSTS_MAP": web.hosts_map_setting(),
                "FRONTIER_DELAY": 0.3,
                "REDIS_URL": server.url,
                "FRONTIER_MAX_REDIS_FAILURES": 3,
            }
            proc = start_crawl(seeds, tmp_path / "data", settings)
            deadline = time.monotonic() + 60
            while len(web.requests()) < 12 and time.monotonic() < deadline:
                time.sleep(0.05)
            fetched_at_kill = len(web.requests())
            server.kill()
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
