"""DNS against a real name server on loopback (tests/dnsserver.py): record TTLs within
floor..cap, negative answers, a changed record, a crawl whose names come only from that
server, and a name resolving into a refused network (a refusal, not a DNS failure)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scripts.crawlrun import run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.dnsserver import PROJECT_ROOT, LocalDns
from tests.integration.ipv6_web import Ipv6Site
from tests.integration.test_gates import stats_of

# The probe resolves every 50 ms; a re-query may come that much after the expiry, plus
# lookup latency and scheduling on 2 shared cores.
LATE_S = 0.5


def start_probe(dns: LocalDns, redis_url: str, names: list[str], for_s: float, **settings: Any):
    values = {
        "DNS_SERVERS": dns.server,
        "DNS_ALLOWED_NETWORKS": "127.0.0.0/8",
        "DNS_TIMEOUT": 2,
        **settings,
    }
    cmd = [
        *(sys.executable, "-m", "tests.integration.dns_probe", "--settings", json.dumps(values)),
        *("--redis", redis_url, "--names", ",".join(names), "--for", str(for_s)),
    ]
    return subprocess.Popen(cmd, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)


def finish_probe(proc: subprocess.Popen[str]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    rows = [json.loads(line) for line in out.splitlines()]
    return rows[:-1], rows[-1]["stats"]


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


def wait_for_query(dns: LocalDns, name: str, timeout_s: float = 20) -> float:
    deadline = time.time() + timeout_s
    while not dns.queries(name):
        assert time.time() < deadline, f"the probe never asked for {name}"
        time.sleep(0.02)
    return dns.queries(name)[0]["t"]


def test_answers_live_their_ttl_within_floor_and_cap(local_dns: LocalDns) -> None:
    local_dns.set("mid.test", A=["127.0.60.1"], ttl=2)  # within 1..2.5: its own TTL
    local_dns.set("low.test", A=["127.0.60.2"], ttl=0)  # below the floor (1 s)
    local_dns.set("high.test", A=["127.0.60.3"], ttl=3600)  # above the cap (2.5 s)
    names = ["mid.test", "low.test", "high.test", "missing.test"]
    # No Redis: this process's own cache (the shared one is in the next test).
    proc = start_probe(
        local_dns, "", names, 6, DNS_TTL_MIN=1, DNS_CACHE_TTL=2.5, DNS_NEGATIVE_TTL=1
    )
    rows, stats = finish_probe(proc)
    for name, live_s in (("mid.test", 2), ("low.test", 1), ("high.test", 2.5)):
        asked = gaps([q["t"] for q in local_dns.queries(name)])
        assert len(asked) >= 2, (name, asked)
        assert all(live_s <= g <= live_s + LATE_S for g in asked), (name, asked)
        assert {r["ip"] for r in rows if r["name"] == name} == {local_dns.zone[name]["A"][0]}
    # NXDOMAIN is remembered DNS_NEGATIVE_TTL (1 s): asked about once a second, not 20 times.
    missing = gaps([q["t"] for q in local_dns.queries("missing.test") if q["type"] == "A"])
    assert missing and all(1 <= g <= 1 + LATE_S for g in missing), missing
    assert {r["error"] for r in rows if r["name"] == "missing.test"} == {"nxdomain"}
    assert stats["dns/failed/nxdomain"] == len(missing) + 1
    assert stats["dns/lookups"] >= len(missing) + 1 + 3 * 2
    hits = stats["dns/cache/local_hit"] + stats.get("dns/cache/shared_hit", 0)
    assert hits / (hits + stats["dns/lookups"]) > 0.8  # ~100 resolutions, ~20 lookups


def test_a_changed_record_is_followed_within_its_ttl(local_dns: LocalDns, redis_url, redis_client):
    local_dns.set("multi.test", A=["127.0.60.1", "127.0.60.2"], ttl=2)
    local_dns.set("gone.test", A=["127.0.60.5"], ttl=1)
    proc = start_probe(local_dns, redis_url, ["multi.test", "gone.test"], 6, DNS_TTL_MIN=1)
    wait_for_query(local_dns, "multi.test")
    time.sleep(1.0)
    local_dns.set("multi.test", A=["127.0.60.3"], ttl=2)
    local_dns.set("gone.test")  # now NXDOMAIN: the stale answer serves (DNS_CACHE_STALE_MAX)
    changed_at = time.time()
    rows, stats = finish_probe(proc)
    multi = [r for r in rows if r["name"] == "multi.test"]
    before = {r["ip"] for r in multi if r["t"] < changed_at}
    assert len(before) == 1 and before <= {"127.0.60.1", "127.0.60.2"}  # one address, kept
    switched = min(r["t"] for r in multi if r["ip"] == "127.0.60.3")
    assert 0 <= switched - changed_at <= 2 + LATE_S
    assert all(r["ip"] == "127.0.60.3" for r in multi if r["t"] >= switched)
    assert {r.get("ip") for r in rows if r["name"] == "gone.test"} == {"127.0.60.5"}
    assert stats["dns/cache/stale_used"] >= 1


def dns_only(dns: LocalDns, **extra: Any) -> dict[str, Any]:
    """Crawl settings under which names resolve only through `dns`."""
    return {
        "DNS_HOSTS_MAP": {},
        "DNS_HOSTS_MAP_ONLY": False,
        "DNS_SERVERS": dns.server,
        "FRONTIER_DELAY": 0.1,
        "FRONTIER_DNS_RETRY_DELAY": 0.2,
        **extra,
    }


def test_a_crawl_resolves_names_only_through_dns_servers(tmp_path: Path) -> None:
    spec = WebSpec(hosts=[HostSpec("one.test", pages=3), HostSpec("two.test", pages=3)])
    with TestWeb(spec, lifetime=120) as web, LocalDns() as dns:
        for host, ip in web.hosts.items():
            dns.set(host, A=[ip], ttl=300)
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        result = run_crawl(seeds, tmp_path / "data", dns_only(dns), timeout=120)
        requests, queries = web.requests(), dns.queries()
    assert result.returncode == 0, result.log[-3000:]
    assert set(web.pages) <= {r["url"] for r in requests if r["status"] == 200}
    assert all(r["server_ip"] == web.hosts[r["host"]] for r in requests)  # no 421
    assert "DNS lookup failed" not in result.log
    # One lookup per name for the frontier and the downloader together (TTL 300 s).
    assert sorted(q["name"] for q in queries) == sorted(web.hosts)
    stats = stats_of(result)
    assert stats["dns/lookups"] == 2 and "dns/failed" not in stats


def test_a_name_in_a_refused_network_is_refused_once_and_never_contacted(tmp_path: Path) -> None:
    spec = WebSpec(hosts=[HostSpec("fine.test", pages=3), HostSpec("victim.test", pages=2)])
    with TestWeb(spec, lifetime=120) as web, LocalDns() as dns:
        fine_ip, victim_ip = web.hosts["fine.test"], web.hosts["victim.test"]
        dns.set("fine.test", A=[fine_ip], ttl=300)
        # Loopback outside the allowed /32; fine.test links to victim.test's root.
        for name in ("inside.test", "victim.test"):
            dns.set(name, A=[victim_ip], ttl=300)
        inside = [web.url("inside.test", p) for p in ("/", "/page/1", "/page/2")]
        seeds = write_seeds(tmp_path / "seeds.txt", [web.url("fine.test"), *inside])
        settings = dns_only(dns, DNS_ALLOWED_NETWORKS=f"{fine_ip}/32")
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        requests, queries = web.requests(), dns.queries()
    assert result.returncode == 0, result.log[-3000:]
    assert [r for r in requests if r["server_ip"] == victim_ip] == []  # zero contacts
    assert {r["url"] for r in requests if r["status"] == 200} >= {web.url("fine.test")}
    for name in ("inside.test", "victim.test"):
        lines = [line for line in result.log.splitlines() if f"Dropping URLs of {name}" in line]
        assert len(lines) == 1 and "(loopback)" in lines[0], lines
        assert [q["type"] for q in queries if q["name"] == name] == ["A"]  # asked once
    stats = stats_of(result)
    assert stats["dns/refused/loopback"] == stats["frontier/dns/refused/loopback"] == 2
    assert "frontier/dns/failed" not in stats and "resolution failed" not in result.log


def crawl_aaaa_only(tmp_path: Path, ipv6: bool) -> tuple[Any, list[dict[str, Any]], list[str]]:
    """Crawl six.test, an AAAA-only name (::1, allowed); (result, server log, query types)."""
    with Ipv6Site() as site, LocalDns() as dns:
        dns.set("six.test", AAAA=["::1"], ttl=300)
        seeds = write_seeds(tmp_path / "seeds.txt", [f"http://six.test:{site.port}/"])
        # ::1 allowed either way: only DNS_IPV6 decides whether the site is reached.
        settings = dns_only(
            dns, DNS_IPV6=ipv6, DNS_ALLOWED_NETWORKS="127.0.0.0/8,::1/128", FRONTIER_DNS_RETRIES=0
        )
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        return result, site.requests, [q["type"] for q in dns.queries("six.test")]


def test_an_aaaa_only_name_is_fetched_over_ipv6(tmp_path: Path) -> None:
    result, requests, asked = crawl_aaaa_only(tmp_path, ipv6=True)
    assert result.returncode == 0, result.log[-3000:]
    # The soft-404 probe asks for a random path too.
    assert {r["path"] for r in requests} >= {"/robots.txt", "/", "/leaf"}
    assert {r["client"] for r in requests} == {"::1"}
    assert {item["ip"] for item in result.items} == {"::1"}
    assert asked == ["A", "AAAA"]  # IPv4 first, once per TTL (300 s)


def test_dns_ipv6_off_never_asks_for_aaaa_nor_contacts_the_ipv6_site(tmp_path: Path) -> None:
    result, requests, asked = crawl_aaaa_only(tmp_path, ipv6=False)
    assert result.returncode == 0, result.log[-3000:]
    assert requests == []
    assert asked == ["A"]
    assert stats_of(result)["dns/failed/nodata"] == 1
    assert "Dropping URLs of six.test: resolution failed 1 times" in result.log
