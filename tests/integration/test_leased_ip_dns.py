"""One name, two A records (two 127.x servers on one port), served by the test DNS
server (tests/dnsserver.py) with a short TTL: every request goes to an address whose
politeness clock was charged (the frontier's lease), one in flight per address, each
address's gaps at least the delay, whichever address the downloader would have picked.
"""

from __future__ import annotations

from pathlib import Path

from scripts.crawlrun import per_ip_violations, run_crawl, write_seeds
from tests.dnsserver import LocalDns
from tests.integration.loopback_servers import serving
from tests.integration.test_gates import stats_of

ADDRESSES = ["127.0.61.1", "127.0.61.2"]
DELAY_S = 0.5
LINKS = 6


def test_two_a_records_every_request_goes_to_a_charged_address(
    tmp_path: Path, local_dns: LocalDns
) -> None:
    with serving(ADDRESSES, links=LINKS) as servers:
        local_dns.set("multi.test", A=ADDRESSES, ttl=2)
        seeds = write_seeds(tmp_path / "seeds.txt", [f"http://multi.test:{servers.port}/"])
        settings = {
            "DNS_HOSTS_MAP": {},
            "DNS_HOSTS_MAP_ONLY": False,
            "DNS_SERVERS": local_dns.server,
            "FRONTIER_DELAY": DELAY_S,
        }
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        log = list(servers.log)
    assert result.returncode == 0, result.log[-4000:]
    paths = [r["path"] for r in log]
    assert {"/", "/robots.txt", *(f"/p/{n}" for n in range(LINKS))} <= set(paths)  # + a probe
    assert {r["host"] for r in log} == {f"multi.test:{servers.port}"}
    assert per_ip_violations(log, DELAY_S, slack=0.005) == (1, [])
    stats = stats_of(result)
    assert stats["fetch/connect/leased_ip"] == len(log)
    assert "fetch/connect/resolved" not in stats
