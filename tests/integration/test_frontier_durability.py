"""The frontier across processes: resume, SIGKILL, restarts and two workers.

Everything is measured on the test web's own request log: what was fetched,
how often, and the gaps between fetches on each IP.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from pathlib import Path

import redis

from scripts.crawlrun import per_ip_violations, run_crawl, start_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec


def five_ip_web(pages: int = 8, latency_ms: float = 0) -> WebSpec:
    names = ["one", "two", "three", "four", "five"]
    return WebSpec(hosts=[HostSpec(f"{n}.test", pages=pages, latency_ms=latency_ms) for n in names])


def fetch_counts(requests: list[dict]) -> Counter:
    return Counter(r["url"] for r in requests if r["path"] != "/robots.txt")


def test_second_crawl_resumes_without_refetching_or_bursting(tmp_path: Path) -> None:
    delay = 1.0
    with TestWeb(five_ip_web(pages=5), lifetime=300) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        settings = {"DNS_HOSTS_MAP": web.hosts_map_setting(), "FRONTIER_DELAY": delay}
        first = run_crawl(seeds, tmp_path / "data", {**settings, "CLOSESPIDER_PAGECOUNT": 8})
        fetched_first = len(web.requests())
        second = run_crawl(seeds, tmp_path / "data", settings)
        requests = web.requests()
    assert first.returncode == 0 and second.returncode == 0, second.log[-3000:]
    assert 8 <= fetched_first < len(web.pages)
    counts = fetch_counts(requests)
    assert set(web.pages) <= set(counts)
    assert [u for u, n in counts.items() if n > 1] == []
    # The restart owes each IP the rest of its delay: no gap below it, even
    # between the last fetch of the first run and the first of the second.
    max_inflight, short_gaps = per_ip_violations(requests, delay)
    assert (max_inflight, short_gaps) == (1, [])


def test_killed_worker_loses_no_url(tmp_path: Path) -> None:
    with TestWeb(five_ip_web(pages=10, latency_ms=100), lifetime=300) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        settings = {
            "DNS_HOSTS_MAP": web.hosts_map_setting(),
            "FRONTIER_DELAY": 0.3,
            "DOWNLOAD_TIMEOUT": 3,
            "FRONTIER_LEASE_TTL": 4,
        }
        proc = start_crawl(seeds, tmp_path / "data", settings)
        deadline = time.monotonic() + 60
        while len(web.requests()) < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        killed_at = len(web.requests())
        rerun = run_crawl(seeds, tmp_path / "data", settings)
        requests = web.requests()
    assert rerun.returncode == 0, rerun.log[-3000:]
    assert 20 <= killed_at < len(web.pages)
    counts = fetch_counts(requests)
    assert set(web.pages) <= set(counts), "a URL was lost with the killed worker"
    twice = [u for u, n in counts.items() if n > 1]
    # Only leases in flight at the kill may be fetched again: at most one per IP
    # downloading, plus pages fetched but not yet parsed.
    assert len(twice) <= 2 * len(set(web.hosts.values())), twice
    assert "lease_expired" in rerun.log or not twice


def test_two_workers_share_one_frontier_politely(tmp_path: Path, redis_url: str) -> None:
    redis.Redis.from_url(redis_url).flushall()
    delay = 0.3
    # 20 pages an IP at 0.3 s: a crawl of ~7 s, longer than the second worker's start-up
    # can lag the first's on a loaded machine (with 8 pages, ~3 s, the first once did all
    # 45 pages before the second leased one).
    with TestWeb(five_ip_web(pages=20, latency_ms=50), lifetime=300) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        settings = {
            "DNS_HOSTS_MAP": web.hosts_map_setting(),
            "FRONTIER_DELAY": delay,
            "REDIS_URL": redis_url,
        }
        workers = [
            start_crawl(seeds, tmp_path / f"data{n}", settings, tmp_path / f"items{n}.jsonl")
            for n in (1, 2)
        ]
        outputs = [w.communicate(timeout=240) for w in workers]
        requests = web.requests()
    assert [w.returncode for w in workers] == [0, 0], outputs[1][1][-3000:]
    counts = fetch_counts(requests)
    assert set(web.pages) <= set(counts)
    assert [u for u, n in counts.items() if n > 1] == []
    items = [(tmp_path / f"items{n}.jsonl").read_text().count("\n") for n in (1, 2)]
    assert min(items) > 0, f"one worker did all the work: {items}"
    max_inflight, short_gaps = per_ip_violations(requests, delay)
    assert (max_inflight, short_gaps) == (1, [])
