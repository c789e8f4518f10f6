"""The fetch goes to the IP the frontier charged (DESIGN invariant 7), on real servers.

Each host name here answers on several 127.x addresses on one port; the downloader's
resolver (DNS_HOSTS_MAP, the reactor's /etc/hosts, or a stale map) points at one of
them and the lease at another. The servers' own logs say where each request landed
and with which Host header and TLS SNI name.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from scripts.crawlrun import PROJECT_ROOT, per_ip_violations, run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.loopback_servers import self_signed, serving
from tests.integration.test_gates import stats_of

DECOY, LEASED, MOVED = "127.0.0.2", "127.0.0.3", "127.0.0.4"
LOOPBACK = {"DNS_ALLOWED_NETWORKS": ["127.0.0.0/8"]}


def fetch(tmp_path: Path, requests: list[dict[str, Any]], **settings: Any) -> list[dict]:
    """Run the requests through the project's handler (tests/integration/leased_fetch.py)."""
    config, out = tmp_path / "fetch.json", tmp_path / "fetched.jsonl"
    config.write_text(json.dumps({"requests": requests, "settings": {**LOOPBACK, **settings}}))
    cmd = [sys.executable, "-m", "tests.integration.leased_fetch", str(config), str(out)]
    done = subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "fetch/connect/" in done.stderr, done.stderr[-3000:]  # the handler counted routes
    return [json.loads(line) for line in out.read_text().splitlines()]


def leased(ip: str, **meta: str) -> dict[str, str]:
    return {"frontier_ip": ip, "download_slot": ip, "frontier_lease": f"{ip}#1", **meta}


def test_a_leased_request_reaches_its_ip_whatever_dns_hosts_map_says(tmp_path: Path) -> None:
    with serving([DECOY, LEASED, MOVED]) as servers:
        base = f"http://site.test:{servers.port}"
        requests: list[dict[str, Any]] = [
            {"url": f"{base}/a", "meta": leased(LEASED)},
            # One connection at a time: were the pool keyed by host alone, /b would reuse
            # the connection to LEASED that /a left open.
            {"url": f"{base}/b", "meta": leased(MOVED)},
            {"url": f"{base}/c"},  # not leased: the resolver decides, as before
            # A robots.txt redirect hop to another host: the IP was charged for site.test.
            {
                "url": f"http://other.test:{servers.port}/robots.txt",
                "meta": leased(LEASED, frontier_robots=base),
            },
        ]
        hosts = {"site.test": DECOY, "other.test": DECOY}
        fetched = fetch(
            tmp_path, requests, DNS_HOSTS_MAP=hosts, DNS_HOSTS_MAP_ONLY=True, CONCURRENT_REQUESTS=1
        )
    assert sorted(r.get("ip", "") for r in fetched) == sorted([LEASED, MOVED, DECOY, DECOY])
    where = {r["path"]: (r["server_ip"], r["host"]) for r in servers.log}
    assert where == {
        "/a": (LEASED, f"site.test:{servers.port}"),
        "/b": (MOVED, f"site.test:{servers.port}"),
        "/c": (DECOY, f"site.test:{servers.port}"),
        "/robots.txt": (DECOY, f"other.test:{servers.port}"),
    }


def test_a_leased_request_reaches_its_ip_whatever_the_reactor_resolves(tmp_path: Path) -> None:
    # "localhost" is 127.0.0.1 in /etc/hosts: the reactor's own resolver answers it.
    with serving(["127.0.0.1", LEASED]) as servers:
        url = f"http://localhost:{servers.port}/page"
        requests: list[dict[str, Any]] = [
            {"url": url, "meta": leased(LEASED)},
            {"url": url + "?plain"},
        ]
        fetch(tmp_path, requests, DNS_HOSTS_MAP={}, DNS_HOSTS_MAP_ONLY=False)
    assert [(r["path"], r["host"]) for r in servers.on(LEASED)] == [
        ("/page", f"localhost:{servers.port}")
    ]
    assert [r["path"] for r in servers.on("127.0.0.1")] == ["/page?plain"]


def test_https_to_the_leased_ip_keeps_the_host_name_for_sni(tmp_path: Path) -> None:
    tls = self_signed("secure.test", tmp_path)
    with serving([DECOY, LEASED], tls=tls) as servers:
        url = f"https://secure.test:{servers.port}/page"
        fetched = fetch(
            tmp_path,
            [{"url": url, "meta": leased(LEASED)}],
            DNS_HOSTS_MAP={"secure.test": DECOY},
            DNS_HOSTS_MAP_ONLY=True,
        )
    assert fetched == [{"url": url, "status": 200, "ip": LEASED}]
    assert servers.on(DECOY) == []
    [record] = servers.on(LEASED)
    assert (record["sni"], record["host"]) == ("secure.test", f"secure.test:{servers.port}")


def test_a_crawl_fetches_every_page_from_the_ip_the_frontier_charged(tmp_path: Path) -> None:
    """The downloader's resolver holds a stale answer for both hosts (each the other's
    address): every request still reaches the address the frontier charged (the test
    web answers 421 on any other), one at a time per address."""
    spec = WebSpec(hosts=[HostSpec("one.test", pages=4), HostSpec("two.test", pages=4)])
    with TestWeb(spec, lifetime=120) as web:
        hosts = web.hosts_map_setting()
        one, two = hosts["one.test"], hosts["two.test"]
        assert one != two
        settings = {
            "DNS_HOSTS_MAP": hosts,
            "FRONTIER_DELAY": 0.2,
            "TWISTED_DNS_RESOLVER": "tests.integration.stale_resolver.StaleResolver",
            "TEST_STALE_HOSTS_MAP": {"one.test": two, "two.test": one},
        }
        result = run_crawl(write_seeds(tmp_path / "seeds.txt", web.seeds), tmp_path / "d", settings)
        requests = web.requests()
    assert result.returncode == 0, result.log[-4000:]
    assert set(web.pages) <= {r["url"] for r in requests}
    assert [r for r in requests if r["server_ip"] != hosts[r["host"]]] == []
    assert not [r for r in requests if r["status"] == 421]  # misdirected: served elsewhere
    assert per_ip_violations(requests, 0.2, slack=0.005) == (1, [])
    stats = stats_of(result)
    assert stats["fetch/connect/leased_ip"] == len(requests)
    assert "fetch/connect/resolved" not in stats
