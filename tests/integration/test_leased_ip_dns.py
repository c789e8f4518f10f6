"""One name, two A records (two 127.x servers on one port), served by the test DNS
server (tests/dnsserver.py) with a short TTL: every request goes to an address whose
politeness clock was charged (the frontier's lease), one in flight per address, each
address's gaps at least the delay, whichever address the downloader would have picked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from scripts.crawlrun import per_ip_violations, run_crawl, write_seeds
from tests.dnsserver import LocalDns
from tests.integration.loopback_servers import Servers, serving
from tests.integration.test_gates import stats_of

ADDRESSES = ["127.0.61.1", "127.0.61.2"]
DELAY_S = 0.5
LINKS = 6


def via_dns(local_dns: LocalDns, delay: float = DELAY_S, **extra: object) -> dict[str, object]:
    """Settings that resolve through the test's DNS server (no pins)."""
    servers = {"DNS_HOSTS_MAP": {}, "DNS_HOSTS_MAP_ONLY": False, "DNS_SERVERS": local_dns.server}
    return {**servers, "FRONTIER_DELAY": delay, **extra}


def test_two_a_records_every_request_goes_to_a_charged_address(
    tmp_path: Path, local_dns: LocalDns
) -> None:
    with serving(ADDRESSES, links=LINKS) as servers:
        local_dns.set("multi.test", A=ADDRESSES, ttl=2)
        seeds = write_seeds(tmp_path / "seeds.txt", [f"http://multi.test:{servers.port}/"])
        result = run_crawl(seeds, tmp_path / "data", via_dns(local_dns), timeout=120)
        log = list(servers.log)
    assert result.returncode == 0, result.log[-4000:]
    paths = [r["path"] for r in log]
    assert {"/", "/robots.txt", *(f"/p/{n}" for n in range(LINKS))} <= set(paths)  # + a probe
    assert {r["host"] for r in log} == {f"multi.test:{servers.port}"}
    assert per_ip_violations(log, DELAY_S, slack=0.005) == (1, [])
    stats = stats_of(result)
    assert stats["fetch/connect/leased_ip"] == len(log)
    assert "fetch/connect/resolved" not in stats


def _kill_after(
    servers: Servers, pages: int, kill: Callable[[Servers, str], None] = Servers.stop_one
) -> None:
    """`kill` the first address to serve `pages` requests (stop_one: refused from then on)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        served = [r["server_ip"] for r in list(servers.log)]
        if served and served.count(served[0]) >= pages:
            kill(servers, served[0])
            return
        time.sleep(0.005)


@pytest.mark.parametrize(
    "kill",
    [Servers.stop_one, Servers.black_hole, Servers.silence],
    ids=["refused", "black_hole", "hung"],
)
def test_a_name_fails_over_when_its_address_stops_answering(
    tmp_path: Path, local_dns: LocalDns, kill: Callable[[Servers, str], None]
) -> None:
    # The address in use dies after 3 pages; the name's other one answers throughout.
    # Dead: it refuses connections, completes no handshake (black_hole: a host switched
    # off behind a firewall) or takes requests and answers none (hung). The page that
    # found it dead is admitted again to the other address (dns avoid), and what is still
    # queued on the dead one goes there at its next lease, with the default quarantine and
    # FRONTIER_DOWN_AFTER. Before: refused, the queued pages waited on the dead address
    # for as long as the crawl ran (until that IP was down, later); silent, each timed
    # out twice and was given up, into a 600 s quarantine; neither ended in 120 s.
    links = 12
    with serving(ADDRESSES, links=links) as servers:
        local_dns.set("twin.test", A=ADDRESSES, ttl=60)
        seeds = write_seeds(tmp_path / "seeds.txt", [f"http://twin.test:{servers.port}/"])
        settings = via_dns(local_dns, 0.2, DOWNLOAD_TIMEOUT=2, ROBOTS_FETCH_TIMEOUT=2)
        killer = threading.Thread(target=_kill_after, args=(servers, 3, kill), daemon=True)
        killer.start()
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        log = list(servers.log)
    assert result.returncode == 0, result.log[-4000:]
    pages = {"/", *(f"/p/{n}" for n in range(links))}
    assert pages <= {r["path"] for r in log}, sorted(pages - {r["path"] for r in log})
    assert len(servers.on(log[0]["server_ip"])) == 3  # none after it died
    stats = stats_of(result)
    failed = stats.get("fetch/errors/timeout", 0) + stats.get("fetch/errors/connect", 0)
    assert stats["dns/avoided"] >= 1 and stats["frontier/rerouted"] >= 1
    assert 1 <= failed <= 3, stats  # not one per queued page
    dead = log[0]["server_ip"]
    assert f"{dead} did not answer for twin.test" in result.log  # the operator's one line
    assert "frontier/dropped/ip_down" not in stats and "retry/max_reached" not in stats


@pytest.mark.parametrize(
    "kill", [Servers.stop_one, Servers.black_hole], ids=["refused", "black_hole"]
)
def test_a_name_whose_first_address_is_dead_is_crawled_at_the_other(
    tmp_path: Path, local_dns: LocalDns, kill: Callable[[Servers, str], None]
) -> None:
    # The name's first address is dead from the start: nothing listens there (refused),
    # or it completes no handshake (black_hole: a host switched off behind a firewall).
    # Its robots.txt fetch is refused or times out, shares no verdict, the page is
    # admitted again to the other address, and the whole site is crawled from it.
    # Before, the origin's robots.txt counted as unreachable (ROBOTS_ERROR_TTL, 600 s,
    # three times) and every page was given up.
    with serving(ADDRESSES, links=LINKS) as servers:
        kill(servers, ADDRESSES[0])
        local_dns.set("half.test", A=ADDRESSES, ttl=60)
        seeds = write_seeds(tmp_path / "seeds.txt", [f"http://half.test:{servers.port}/"])
        settings = via_dns(local_dns, 0.2, DOWNLOAD_TIMEOUT=2, ROBOTS_FETCH_TIMEOUT=2)
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        log = list(servers.log)
    assert result.returncode == 0, result.log[-4000:]
    pages = {"/", "/robots.txt", *(f"/p/{n}" for n in range(LINKS))}
    assert pages <= {r["path"] for r in log}, sorted(pages - {r["path"] for r in log})
    stats = stats_of(result)
    assert stats["frontier/rerouted"] >= 1 and stats["dns/avoided"] >= 1
    assert "robots/verdict/unavailable" not in stats
