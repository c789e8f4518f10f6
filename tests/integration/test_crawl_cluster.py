"""`scrapy crawl web` on a real three-master Redis Cluster: the frontier spreads over
the masters, politeness holds, the crawl ends by itself; and operator verbs reach
every shard."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from scripts.crawlrun import (
    PROJECT_ROOT,
    per_ip_violations,
    run_crawl,
    start_crawl,
    wait_crawl,
    write_seeds,
)
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.redis_cluster import LocalCluster
from tests.integration.test_crawl_web import DELAY, settings_for, small_web


def frontier_keys_per_master(cluster: LocalCluster) -> list[int]:
    return [len(list(node.scan_iter(match="crawlproj:{web:s*"))) for node in cluster.nodes()]


def test_crawl_on_a_cluster_spreads_the_frontier_and_stays_polite(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    with TestWeb(small_web(), lifetime=120) as web:
        # A name that never resolves parks in its host's shard, then is dropped there.
        seeds = write_seeds(tmp_path / "seeds.txt", [*web.seeds, "http://unmapped.test/"])
        settings = settings_for(
            web, REDIS_URL=cluster.url, FRONTIER_DNS_RETRY_DELAY=0.2, FRONTIER_DNS_RETRIES=1
        )
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        requests = web.requests()
    assert result.returncode == 0, result.log[-3000:]
    assert "(12 shard(s))" in result.log  # auto: 4 x 3 masters
    fetched = {r["url"] for r in requests if r["status"] == 200}
    assert set(web.pages) <= fetched, result.log[-6000:]
    paths = Counter((r["host"], r["path"]) for r in requests)
    assert not [p for p, n in paths.items() if n > 1], "a URL was fetched twice"
    max_inflight, short_gaps = per_ip_violations(requests, DELAY)
    assert (max_inflight, short_gaps) == (1, [])
    assert "Dropping URLs of unmapped.test" in result.log
    assert all(n > 0 for n in frontier_keys_per_master(cluster))
    status = verb("status", "--json", "--sample", "0", redis_url=cluster.url)
    counters = json.loads(status.stdout)
    assert (counters["shards"], counters["queued"], counters["leases"]) == (12, 0, 0)
    assert counters["counters"]["acked"] >= len(web.pages)


def test_two_workers_share_a_cluster_frontier(cluster: LocalCluster, tmp_path: Path) -> None:
    with TestWeb(small_web(), lifetime=120) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        settings = settings_for(web, REDIS_URL=cluster.url)
        workers = [
            start_crawl(seeds, tmp_path / f"w{i}", settings, tmp_path / f"items{i}.jsonl")
            for i in range(2)
        ]
        logs = [wait_crawl(worker, 120)[1] for worker in workers]
        requests = web.requests()
    assert [w.returncode for w in workers] == [0, 0], logs[0][-2000:] + logs[1][-2000:]
    assert set(web.pages) <= {r["url"] for r in requests if r["status"] == 200}
    paths = Counter((r["host"], r["path"]) for r in requests if r["path"] != "/robots.txt")
    assert not [p for p, n in paths.items() if n > 1], "a URL was fetched by both workers"
    max_inflight, short_gaps = per_ip_violations(requests, DELAY)
    assert (max_inflight, short_gaps) == (1, [])


def test_operator_verbs_reach_every_shard(cluster: LocalCluster) -> None:
    seeded = verb("seed", "http://later.test/a", "http://later.test/b", redis_url=cluster.url)
    assert seeded.returncode == 0 and "seeded 2 URL(s)" in seeded.stdout, seeded.stderr
    status = json.loads(verb("status", "--json", "--sample", "0", redis_url=cluster.url).stdout)
    assert (status["queued"], status["hosts_waiting_for_dns"]) == (2, 1)  # parked by host
    cluster.flush()
    assert verb("pause", redis_url=cluster.url).returncode == 0
    paused = frontier_keys_per_master(cluster)
    assert sum(paused) == 12 and all(paused)  # one paused key per shard, on every master
    status = json.loads(verb("status", "--json", "--sample", "0", redis_url=cluster.url).stdout)
    assert status["paused"] is True
    assert verb("resume", redis_url=cluster.url).returncode == 0
    assert sum(frontier_keys_per_master(cluster)) == 0
    again = verb("resume", redis_url=cluster.url)
    assert again.returncode == 2 and "the crawl is not paused" in again.stderr


def verb(*args: str, redis_url: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "scrapy", *args, "-s", f"REDIS_URL={redis_url}"]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)


def test_recrawl_on_a_cluster(cluster: LocalCluster, tmp_path: Path) -> None:
    """Re-crawl state lives on the crawl's own slot: `scrapy recrawl` and a seedless
    crawl re-visit a host with conditional GETs on the cluster too."""
    spec = WebSpec(hosts=[HostSpec("v.test", pages=3, validators=True), HostSpec("w.test")])
    with TestWeb(spec, lifetime=120) as web:
        settings = settings_for(web, REDIS_URL=cluster.url)
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        first = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        assert first.returncode == 0, first.log[-3000:]
        before = len(web.requests())
        marked = verb("recrawl", "--host", "v.test", redis_url=cluster.url)
        assert marked.returncode == 0 and "4 stored URLs due now" in marked.stdout, marked
        again = run_crawl(None, tmp_path / "data", settings, timeout=120)
        assert again.returncode == 0, again.log[-3000:]
        revisits = web.requests()[before:]
    assert len(revisits) == 4 and all(r["status"] == 304 and r.get("inm") for r in revisits)
    assert {row["change"] for row in again.items} == {"not_modified"}
