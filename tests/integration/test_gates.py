"""Crawl policy gates end to end: robots.txt, trap guards, address policy, size caps.

Each test crawls a small purpose-built web and asserts on the server's own log
(and on the crawler's stats where the point is that nothing reached a server).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from scripts.crawlrun import CrawlResult, per_ip_violations, run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec


def crawl(web: TestWeb, tmp_path: Path, seeds: list[str] | None = None, **settings: object):
    merged = {"DNS_HOSTS_MAP": web.hosts_map_setting(), "FRONTIER_DELAY": 0.1, **settings}
    path = write_seeds(tmp_path / "seeds.txt", seeds or web.seeds)
    result = run_crawl(path, tmp_path / "data", merged)
    assert result.returncode == 0, result.log[-4000:]
    return result, web.requests()


def stats_of(result: CrawlResult) -> dict[str, object]:
    """The stats dict Scrapy dumps at the end of the crawl log."""
    match = re.search(r"Dumping Scrapy stats:\n(\{.*?\})\n", result.log, re.S)
    assert match, "no stats in the crawl log"
    text = re.sub(r"datetime\.datetime\([^)]*\)", "None", match.group(1))
    return ast.literal_eval(text)


def paths_of(requests: list[dict], host: str) -> list[str]:
    return [r["path"] for r in sorted(requests, key=lambda r: r["t_start"]) if r["host"] == host]


def test_robots_gate_no_race_rules_and_crawl_delay(tmp_path: Path) -> None:
    rules = "User-agent: *\nDisallow: /private/\nCrawl-delay: 1\n"
    spec = WebSpec(
        hosts=[
            HostSpec("rules.test", pages=4, robots=rules, private=True),
            HostSpec("open.test", pages=3, robots=None),  # robots.txt 404: allow all
            HostSpec("down.test", pages=3, robots=500),  # robots.txt 5xx: disallow all
        ]
    )
    with TestWeb(spec, lifetime=120) as web:
        result, requests = crawl(web, tmp_path, ROBOTS_ERROR_TTL=1, ROBOTS_MAX_ERROR_RETRIES=1)
    # No page request for a host leaves before its robots verdict is known.
    for host in web.hosts:
        ordered = sorted((r for r in requests if r["host"] == host), key=lambda r: r["t_start"])
        assert ordered[0]["path"] == "/robots.txt", (host, ordered[:2])
        pages = [r for r in ordered if r["path"] != "/robots.txt"]
        assert all(p["t_start"] >= ordered[0]["t_end"] for p in pages)
    assert not [p for p in paths_of(requests, "rules.test") if p.startswith("/private/")]
    assert set(paths_of(requests, "down.test")) == {"/robots.txt"}
    assert len(paths_of(requests, "down.test")) == 2  # retried once after its error TTL
    assert set(web.pages) <= {r["url"] for r in requests}
    # Crawl-delay: 1 from robots.txt governs rules.test's IP after the robots fetch.
    on_rules = [r for r in requests if r["host"] == "rules.test"]
    assert per_ip_violations(on_rules, 1.0) == (1, [])
    stats = stats_of(result)
    assert stats["robots/verdict/allow_all"] == 1
    assert stats["frontier/dropped/robots_unavailable"] >= 1


def test_robots_timeout_means_disallow(tmp_path: Path) -> None:
    spec = WebSpec(hosts=[HostSpec("slow.test", pages=2, latency_ms=1500)])
    with TestWeb(spec, lifetime=120) as web:
        result, requests = crawl(
            web, tmp_path, ROBOTS_FETCH_TIMEOUT=0.3, ROBOTS_ERROR_TTL=1, ROBOTS_MAX_ERROR_RETRIES=0
        )
    assert {r["path"] for r in requests} == {"/robots.txt"}
    assert stats_of(result)["robots/verdict/disallow_all"] >= 1


def test_traps_cost_at_most_their_guards_budget(tmp_path: Path) -> None:
    spec = WebSpec(hosts=[HostSpec("trappy.test", pages=3, trap=True)])
    with TestWeb(spec, lifetime=120) as web:
        # No calendar penalty: the walk would end on its score (rejected/calendar_walk)
        # before the guard under test, the per-pattern cap, is reached.
        guards = {"URL_MAX_PER_PATTERN": 5, "URL_MAX_REPEATED_SEGMENTS": 3}
        result, requests = crawl(web, tmp_path, PRIORITY_CALENDAR_PENALTY=0, **guards)
    paths = paths_of(requests, "trappy.test")
    assert len([p for p in paths if p.startswith("/calendar/")]) <= 5
    assert len([p for p in paths if p.startswith("/trap")]) <= 3
    stats = stats_of(result)
    assert stats["frontier/rejected/pattern_cap"] >= 1
    assert stats["frontier/rejected/filter/repeated_segments"] >= 1


def test_refused_addresses_are_never_contacted_also_via_redirects(tmp_path: Path) -> None:
    metadata = "http://169.254.169.254/latest/meta-data/"
    spec = WebSpec(
        hosts=[
            HostSpec(
                "redir.test",
                pages=3,
                status_overrides={
                    "/page/1": [302, {"Location": metadata}],
                    "/page/2": [301, {"Location": "http://sneaky.test/"}],
                },
            )
        ]
    )
    with TestWeb(spec, lifetime=120) as web:
        hosts = {
            **web.hosts_map_setting(),
            "sneaky.test": "127.0.0.1",
            "meta.test": "169.254.169.254",
        }
        seeds = [*web.seeds, "http://meta.test/", "http://10.1.2.3/"]
        result, requests = crawl(
            web, tmp_path, seeds, DNS_HOSTS_MAP=hosts, DNS_ALLOWED_NETWORKS="127.0.10.0/24"
        )
    stats = stats_of(result)
    assert {r["status"] for r in requests if r["path"] in ("/page/1", "/page/2")} == {301, 302}
    assert stats["frontier/rejected/address/link_local"] == 2  # the seed and the redirect
    assert stats["frontier/rejected/address/loopback"] == 1  # redirect to sneaky.test
    assert stats["frontier/rejected/address/private"] == 1  # the 10.x seed
    assert not [k for k in stats if k.startswith("downloader/exception")]


@pytest.mark.timeout(240)
def test_huge_body_and_gzip_bomb_are_cut_with_bounded_memory(tmp_path: Path) -> None:
    spec = WebSpec(hosts=[HostSpec("big.test", pages=2, large_body_kb=50 * 1024, gzip_bomb_mb=200)])
    with TestWeb(spec, lifetime=180) as web:
        result, requests = crawl(
            web, tmp_path, DOWNLOAD_MAXSIZE=2 * 1024 * 1024, MEMUSAGE_CHECK_INTERVAL_SECONDS=0.1
        )
    fetched = {item["final_url"].rsplit("/", 1)[-1] for item in result.items}
    assert "large" not in fetched and "bomb" not in fetched
    assert {"/large", "/bomb"} <= {r["path"] for r in requests}
    stats = stats_of(result)
    assert stats["memusage/max"] - stats["memusage/startup"] < 40 * 1024 * 1024
    assert "larger than download max size" in result.log
    assert "DOWNLOAD_MAXSIZE" in result.log  # the decompression cap's message


def test_repeated_timeouts_quarantine_the_ip(tmp_path: Path) -> None:
    spec = WebSpec(hosts=[HostSpec("sluggish.test", pages=4, latency_ms=1200)])
    with TestWeb(spec, lifetime=120) as web:
        seeds = [web.url("sluggish.test", p) for p in ("/", "/page/1", "/page/2", "/page/3")]
        result, requests = crawl(
            web,
            tmp_path,
            seeds,
            DOWNLOAD_TIMEOUT=0.5,
            FRONTIER_LEASE_TTL=5,
            RETRY_TIMES=0,
            FRONTIER_QUARANTINE_AFTER=2,
            FRONTIER_QUARANTINE_S=3,
        )
    pages = sorted((r for r in requests if r["path"] != "/robots.txt"), key=lambda r: r["t_start"])
    assert len(pages) >= 3
    # The crawler gave up on each page after 0.5 s: its second timeout starts the
    # quarantine, so the third request waits >= 3 s after the second one began.
    assert pages[2]["t_start"] - pages[1]["t_start"] >= 0.5 + 3.0
    assert stats_of(result)["frontier/redis/quarantined"] >= 1


def test_sitemaps_from_robots_txt_feed_the_frontier(tmp_path: Path) -> None:
    spec = WebSpec(hosts=[HostSpec("mapped.test", pages=3, sitemap=True)])
    with TestWeb(spec, lifetime=120) as web:
        result, requests = crawl(web, tmp_path)
    paths = paths_of(requests, "mapped.test")
    assert {"/sitemap_index.xml.gz", "/sitemap.xml", "/orphan"} <= set(paths)
    assert set(web.pages) <= {r["url"] for r in requests}
    orphan = next(i for i in result.items if i["final_url"].endswith("/orphan"))
    assert orphan["depth"] == 2  # sitemap index -> sitemap -> page
    assert stats_of(result)["robots/sitemaps_queued"] == 1
