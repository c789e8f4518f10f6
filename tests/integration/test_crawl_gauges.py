"""Crawl-wide gauges through a real crawl of the test web on a real Redis: the Prometheus
endpoint scraped over loopback while it runs, then `scrapy status` run as a command on
what the crawl left: queue depth by front queue and back-queue lane, Bloom fill and
estimated false-positive rate, refusals by reason (the admit script's and the worker's),
robots.txt failures by cause, and the re-crawl backlog."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import redis

from scripts.crawlrun import start_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.test_metrics import Samples, free_port, scrape, value
from tests.integration.test_operator_commands import verb

DEAD_IP = "127.0.99.1"  # nothing listens there: connection refused
CRAWL = "web"


def web_spec() -> WebSpec:
    return WebSpec(
        hosts=[
            HostSpec("alpha.test", pages=12),
            HostSpec("flaky.test", pages=3, robots=503),  # robots.txt answers 503
        ]
    )


def moved(samples: Samples | None) -> bool:
    """Every crawl-wide family the assertions need has moved."""
    if samples is None:
        return False
    return (
        value(samples, "crawlproj_queue_back_lanes_known") == 1
        and value(samples, "crawlproj_crawl_urls_rejected", reason="blocked") >= 1
        and value(samples, "crawlproj_crawl_robots_failures", cause="connect") >= 1
        and value(samples, "crawlproj_crawl_robots_failures", cause="http_5xx") >= 1
        and value(samples, "crawlproj_bloom_generation_inserted", shard="0", generation="1") >= 10
    )


def crawl_and_scrape(tmp_path: Path, redis_url: str, port: int) -> Samples | None:
    with TestWeb(web_spec(), lifetime=120) as web:
        hosts = {**web.hosts_map_setting(), "dead.test": DEAD_IP}
        seeds = [*web.seeds, f"http://dead.test:{web.port}/"]
        settings = {
            "REDIS_URL": redis_url,
            "DNS_HOSTS_MAP": hosts,
            "FRONTIER_DELAY": 0.2,
            "ROBOTS_ERROR_TTL": 0.2,
            "ROBOTS_MAX_ERROR_RETRIES": 1,
            "URL_BLOCKLIST": "re:/page/3$",  # a -s list is comma-separated, not JSON
            "METRICS_PORT": port,
            "METRICS_REDIS_INTERVAL": 0.2,
            "SHARED_STATS_INTERVAL": 0.2,
            "SEEN_CAPACITY": 1000,
        }
        proc = start_crawl(write_seeds(tmp_path / "seeds.txt", seeds), tmp_path / "data", settings)
        last: Samples | None = None
        deadline = time.monotonic() + 90
        try:
            while proc.poll() is None and time.monotonic() < deadline and not moved(last):
                last = scrape(port) or last
                time.sleep(0.1)
        finally:
            _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr[-3000:]
    return last


def test_gauges_on_the_endpoint_during_a_crawl_and_in_status_after_it(
    tmp_path: Path, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    client.flushall()
    samples = crawl_and_scrape(tmp_path, redis_url, free_port())
    assert moved(samples), f"the crawl-wide gauges never moved: {samples}"
    assert samples is not None
    assert all(
        not math.isnan(value(samples, "crawlproj_queue_front", priority=str(p))) for p in range(5)
    )
    fp_rate = value(samples, "crawlproj_bloom_generation_fp_rate", shard="0", generation="1")
    assert 0 < fp_rate < 1e-3

    # The crawl is over: pages due long ago are overdue by more than their interval.
    stored = client.keys("crawlproj:{web}*:doc:*")
    assert len(stored) >= 10
    due = next(k for k in client.keys("crawlproj:{web}*recrawl_due"))
    first = {m: s for m, s in client.zrange(due, 0, 4, withscores=True)}
    for fp in first:
        doc = json.loads(client.get(due.replace(b"recrawl_due", b"doc:" + fp)) or b"{}")
        client.zadd(due, {fp: doc["at"] + 1})  # interval 1 s, due seconds ago

    status = verb("status", "--json", "--sample", "0", redis_url=redis_url)
    assert status.returncode == 0, status.stderr
    out = json.loads(status.stdout)
    assert out["queued_by_lane"] == {f"lane_{n}": 0 for n in range(len(out["queued_by_lane"]))}
    assert out["rejected_by_reason"]["blocked"] >= 1
    assert out["robots_failures_by_cause"]["connect"] >= 1
    assert out["robots_failures_by_cause"]["http_5xx"] >= 1
    bloom = out["seen_bloom"][0]
    assert bloom["generation"] == 1 and bloom["inserted"] >= 10
    assert bloom["fill"] == round(bloom["inserted"] / 1000, 4)
    assert out["admitted"] >= 10
    assert out["recrawl"]["due_now"] == len(first)
    assert out["recrawl"]["overdue_by_more_than_one_interval"] == len(first)
    assert out["recrawl"]["overdue_count"] == "exact"
    text = verb("status", "--sample", "0", redis_url=redis_url)
    assert text.returncode == 0 and "rejected_by_reason: {" in text.stdout
