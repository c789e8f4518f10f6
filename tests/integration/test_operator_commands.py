"""Operator verbs against a running crawl; each effect is read off the test web's log."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from scripts.crawlrun import PROJECT_ROOT, run_crawl, start_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec


def verb(
    *args: str,
    redis_url: str | None = None,
    data_dir: Path | None = None,
    hosts: dict[str, str] | None = None,
):
    cmd = [sys.executable, "-m", "scrapy", *args]
    if hosts:  # operators run commands with the crawl's settings: pinned names included
        cmd += [
            "-s",
            f"DNS_HOSTS_MAP={json.dumps(hosts)}",
            "-s",
            "DNS_ALLOWED_NETWORKS=127.0.0.0/8",
        ]
    if redis_url:
        cmd += ["-s", f"REDIS_URL={redis_url}"]
    if data_dir:
        cmd += ["-s", f"CRAWL_DATA_DIR={data_dir}"]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


def requests_to(web: TestWeb, host: str, after: float = 0.0) -> list[dict]:
    return [r for r in web.requests() if r["host"] == host and r["t_start"] > after]


def web_spec() -> WebSpec:
    return WebSpec(
        hosts=[
            HostSpec("steady.test", pages=25, latency_ms=20),
            HostSpec("blocked.test", pages=25, latency_ms=20),
            HostSpec("throttled.test", pages=80, latency_ms=20),
            HostSpec("lonely.test", pages=2),  # gets an operator's seed no page links to
        ]
    )


@pytest.fixture
def running_crawl(tmp_path: Path, redis_url: str):
    redis.Redis.from_url(redis_url).flushall()
    with TestWeb(web_spec(), lifetime=240) as web:
        seeds = [web.url(h) for h in ("steady.test", "blocked.test", "throttled.test")]
        path = write_seeds(tmp_path / "seeds.txt", seeds)
        hosts = web.hosts_map_setting()
        settings = {
            "DNS_HOSTS_MAP": hosts,
            "FRONTIER_DELAY": 0.3,
            "REDIS_URL": redis_url,
            "URL_BLOCKLIST_REFRESH": 0.5,
        }
        crawl = start_crawl(path, tmp_path / "data", settings)
        try:
            wait_for(lambda: len(web.requests()) >= 6)
            yield web, redis_url, hosts
        finally:
            crawl.kill()
            crawl.communicate()


def test_block_throttle_pause_seed_and_status_act_on_a_running_crawl(running_crawl) -> None:
    web, url, hosts = running_crawl
    # block: no request to the host once the crawl has re-read its blocklist.
    assert verb("block", "host:blocked.test", redis_url=url).returncode == 0
    blocked_at = time.time()
    # throttle: gaps on that IP grow to the override.
    out = verb("throttle", "throttled.test", "--delay", "2", "--json", redis_url=url, hosts=hosts)
    assert out.returncode == 0, out.stderr
    throttled_at = time.time()
    # seed: a URL no page links to gets crawled (the test web links its hosts' pages
    # across hosts, so a page of lonely.test would be found without the seed).
    lonely = web.url("lonely.test") + "seeded-by-operator"
    seeded = verb("seed", lonely, "--priority", "0", "--json", redis_url=url, hosts=hosts)
    assert seeded.returncode == 0, seeded.stderr
    reply = json.loads(seeded.stdout)
    assert (reply["message"], reply["already_seen"], reply["rejected"]) == ("seeded 1 URL(s)", 0, 0)
    wait_for(lambda: [r for r in web.requests() if r["url"] == lonely])
    time.sleep(6)
    assert requests_to(web, "blocked.test", after=blocked_at + 1.0) == []
    later = sorted(
        r["t_start"] for r in requests_to(web, "throttled.test", after=throttled_at + 2.5)
    )
    assert len(later) >= 2
    assert min(b - a for a, b in itertools.pairwise(later)) >= 2.0
    # status, overall and per host, machine-readable.
    fetched = {r["url"] for r in web.requests() if r["path"] != "/robots.txt"}
    overall = json.loads(verb("status", "--json", "--sample", "0.5", redis_url=url).stdout)
    assert overall["counters"]["admitted"] >= len(fetched)  # each URL fetched was admitted
    assert overall["blocklist_rules"] == 1 and overall["paused"] is False
    status = verb("status", "--host", "steady.test", "--json", redis_url=url, hosts=hosts)
    host = json.loads(status.stdout)
    assert host["ip"] == hosts["steady.test"] and host["fetched"] > 0
    assert host["outcomes"]["status_2xx"] > 0
    assert next(iter(host["robots"].values()))["verdict"] == "rules"
    # pause: nothing starts while paused; resume: fetching goes on.
    assert verb("pause", redis_url=url).returncode == 0
    time.sleep(1.0)  # in-flight fetches finish
    paused_at = time.time()
    time.sleep(2.0)
    assert [r for r in web.requests() if r["t_start"] > paused_at] == []
    # Paused with every fetch finished and acked: no lease is held, work stays queued.
    paused = json.loads(verb("status", "--json", "--sample", "0", redis_url=url).stdout)
    assert (paused["paused"], paused["leases"]) == (True, 0)
    assert paused["queued"] > 0  # throttled.test's pages wait out the pause
    assert verb("resume", redis_url=url).returncode == 0
    wait_for(lambda: [r for r in web.requests() if r["t_start"] > paused_at])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["throttle"], "missing HOST or IP"),
        (["throttle", "10.0.0.1"], "give --delay or --rps"),
        (["throttle", "unknown.test", "--delay", "1"], "has not been resolved"),
        (["block", "re:("], "re:("),
        (["unblock", "host:never.test"], "no such rule"),
        (["resume"], "not paused"),
        (["seed"], "give seed URLs"),
        (["seed", "ftp://x.test/"], "no valid seed"),
    ],
)
def test_bad_arguments_get_one_line(redis_url: str, args: list[str], message: str) -> None:
    redis.Redis.from_url(redis_url).flushall()
    out = verb(*args, redis_url=redis_url)
    assert out.returncode != 0
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_status_without_a_running_crawl_uses_the_data_folder(tmp_path: Path) -> None:
    # No REDIS_URL and no crawl running: the command starts the folder's embedded Redis.
    out = verb("status", "--json", "--sample", "0", data_dir=tmp_path / "crawl")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["queued"] == 0
    assert not (tmp_path / "crawl" / "redis" / "server.port").exists()  # stopped again


def test_seeded_frontier_is_crawled_by_a_crawl_without_seeds(tmp_path: Path) -> None:
    data = tmp_path / "crawl"
    with TestWeb(WebSpec(hosts=[HostSpec("later.test", pages=3)]), lifetime=120) as web:
        hosts = web.hosts_map_setting()
        # No crawl runs: the verb starts the folder's embedded Redis, queues, stops it.
        seeded = verb("seed", web.url("later.test"), data_dir=data, hosts=hosts)
        assert seeded.returncode == 0, seeded.stderr
        settings = {"DNS_HOSTS_MAP": hosts, "FRONTIER_DELAY": 0.1}
        result = run_crawl(None, data, settings)
        requests = web.requests()
    assert result.returncode == 0, result.log[-3000:]
    assert set(web.pages) <= {r["url"] for r in requests}


def test_a_crawl_without_seeds_on_an_empty_frontier_ends_by_itself(tmp_path: Path) -> None:
    result = run_crawl(None, tmp_path / "crawl", {}, timeout=60)
    assert result.returncode == 0, result.log[-3000:]
    assert "Crawl summary: 0 pages" in result.log
