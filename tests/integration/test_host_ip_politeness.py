"""FRONTIER_HOST_IP_NETWORKS end to end (issue #13): two host names on ONE loopback address.

Inside the networks each host is its own politeness key: the two are fetched side by side
(their requests overlap or follow each other closer than the delay), while per host the
gap from one request's end to the next one's start stays >= FRONTIER_DELAY with at most
one request in flight. Without the setting the address is one slot: every gap on it
>= the delay, as before. Gaps are read from the server's own log.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from scripts.crawlrun import run_crawl, write_seeds
from tests.integration.test_robots_politeness import Answer, SharedIpWeb, robots_txt

DELAY_S = 1.0
HOSTS = ["a.cdn.test", "b.cdn.test"]
PAGES = 3  # /, /p1 .. /p3, robots.txt and a soft-404 probe: 6 requests per host
# Clock granularity of two time.time() reads in the server thread.
SLACK_S = 0.01


def allow_all(host: str, n: int) -> Answer:
    return robots_txt("User-agent: *\nAllow: /\n")


def crawl(tmp_path: Path, address: str, extra: dict[str, Any]) -> list[dict[str, Any]]:
    with SharedIpWeb(address, HOSTS, PAGES, allow_all) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", [web.url(h) for h in HOSTS])
        settings = {
            "DNS_HOSTS_MAP": web.hosts_map(),
            "FRONTIER_DELAY": DELAY_S,
            "ROBOTS_SITEMAPS": False,
            **extra,
        }
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        log = web.ordered()
    assert result.returncode == 0, result.log[-3000:]
    pages = {"/robots.txt", "/", *(f"/p{i}" for i in range(1, PAGES + 1))}
    for host in HOSTS:
        paths = [r["path"] for r in log if r["host"] == host]
        assert len(paths) == len(set(paths)) and pages <= set(paths), paths  # (+ a soft-404 probe)
    return log


def gaps(log: list[dict[str, Any]]) -> list[float]:
    """End of one request to the start of the next (negative: they overlapped)."""
    return [b["t_start"] - a["t_end"] for a, b in itertools.pairwise(log)]


def test_two_hosts_on_one_cdn_address_are_fetched_side_by_side(tmp_path: Path) -> None:
    address = "127.0.0.73"
    log = crawl(tmp_path, address, {"FRONTIER_HOST_IP_NETWORKS": f"{address}/32"})
    for host in HOSTS:
        own = gaps([r for r in log if r["host"] == host])
        # One in flight per host (no negative gap), each gap >= the delay.
        assert min(own) >= DELAY_S - SLACK_S, (host, own)
    across = gaps(log)
    assert min(across) < DELAY_S / 2, across  # the other host's fetch in between
    span = log[-1]["t_end"] - log[0]["t_start"]
    # Two slots need 5 gaps of >= 1 s each (measured 5.1 s); one slot would need 11.
    assert span < 8 * DELAY_S, span


def test_without_the_setting_the_address_is_one_slot(tmp_path: Path) -> None:
    log = crawl(tmp_path, "127.0.0.74", {})
    assert min(gaps(log)) >= DELAY_S - SLACK_S, gaps(log)
