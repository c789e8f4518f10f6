"""The Prometheus endpoint, scraped with urllib while a real crawl of the test web runs."""

from __future__ import annotations

import socket
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from scripts.crawlrun import start_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.components import FETCH_ERRORS, METRICS, with_components

DELAY = 0.3
DEAD_IP = "127.0.99.1"  # nothing listens there: connection refused

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scrape(port: int) -> Samples | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, /, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), float("nan"))


def counter(samples: Samples, name: str) -> float:
    """A frontier counter from the crawl's Redis stats hash (absent until it first moves)."""
    return samples.get(("crawlproj_frontier_crawl_counter", (("name", name),)), 0.0)


def total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


def web_spec() -> WebSpec:
    return WebSpec(
        hosts=[
            HostSpec(
                "alpha.test",
                pages=8,
                private=True,
                robots="User-agent: *\nDisallow: /private/\n",
            ),
            HostSpec(
                "beta.test",
                pages=6,
                status_overrides={"/page/2": [500, {}], "/page/3": [404, {}]},
            ),
            HostSpec("gamma.test", pages=6),
        ]
    )


def done(samples: Samples | None) -> bool:
    """Every family the assertions need has moved (the crawl is under way)."""
    if samples is None:
        return False
    causes = ("connect", "dns", "http_4xx", "http_5xx")
    return (
        total(samples, "crawlproj_responses_total") >= 12
        and value(samples, "crawlproj_politeness_gap_seconds_count") >= 3
        and all(value(samples, "crawlproj_errors_total", cause=c) >= 1 for c in causes)
        and total(samples, "crawlproj_robots_denied_total") >= 1
    )


def test_metrics_endpoint_during_a_crawl(tmp_path: Path) -> None:
    port = free_port()
    with TestWeb(web_spec(), lifetime=120) as web:
        hosts = {**web.hosts_map_setting(), "dead.test": DEAD_IP}
        seeds = [*web.seeds, f"http://dead.test:{web.port}/", "http://unmapped.test/"]
        settings = {
            "DNS_HOSTS_MAP": hosts,
            "FRONTIER_DELAY": DELAY,
            "FRONTIER_DNS_RETRY_DELAY": 0.2,
            "FRONTIER_DNS_RETRIES": 1,
            "ROBOTS_ERROR_TTL": 0.2,
            "ROBOTS_MAX_ERROR_RETRIES": 1,
            "METRICS_PORT": port,
            "METRICS_REDIS_INTERVAL": 0.2,
            "SEEN_CAPACITY": 1000,  # so the Bloom fill ratio moves off 0.0000
            **with_components(METRICS, FETCH_ERRORS),
        }
        proc = start_crawl(write_seeds(tmp_path / "seeds.txt", seeds), tmp_path / "data", settings)
        last: Samples | None = None
        deadline = time.monotonic() + 90
        try:
            while proc.poll() is None and time.monotonic() < deadline and not done(last):
                last = scrape(port) or last
                time.sleep(0.1)
        finally:
            _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr[-3000:]
    assert f"Prometheus endpoint on http://127.0.0.1:{port}/metrics" in stderr
    assert done(last), f"metrics never showed the crawl's progress: {last}"
    check_sane(last, ips=len(set(hosts.values())))
    assert scrape(port) is None, "the endpoint outlived the crawl"


def check_sane(samples: Samples, ips: int) -> None:
    assert value(samples, "crawlproj_responses_total", status_class="2xx") >= 10
    assert value(samples, "crawlproj_response_bytes_total") > 1000
    assert value(samples, "crawlproj_errors_total", cause="tls") == 0
    # Politeness: every gap this worker saw is at least the configured delay.
    assert value(samples, "crawlproj_politeness_delay_seconds") == DELAY
    assert value(samples, "crawlproj_politeness_gap_min_seconds") >= DELAY - 0.02
    count = value(samples, "crawlproj_politeness_gap_seconds_count")
    below = value(samples, "crawlproj_politeness_gap_seconds_bucket", le=str(DELAY * 0.9))
    assert count >= 3 and below == 0
    assert value(samples, "crawlproj_politeness_overlaps_total") == 0
    # Frontier and gates, mirrored from Scrapy stats and the crawl's Redis.
    check_frontier(samples, ips)
    assert value(samples, "crawlproj_frontier_crawl_counter", name="admitted") >= 10
    assert value(samples, "crawlproj_urls_admitted_total") >= 10
    assert 0 < value(samples, "crawlproj_url_duplicate_ratio") < 1
    # URL-seen's Bloom in Redis: every admitted URL inserted (and shapes, link pairs).
    assert total(samples, "crawlproj_bloom_generation_inserted") >= 10
    assert 0 < total(samples, "crawlproj_bloom_generation_fill") < 1
    assert value(samples, "crawlproj_trap_guard_hits_total", guard="pattern_cap") == 0
    # Every page of this web has prose of its own (no /copy/N): checked, none a duplicate.
    assert value(samples, "crawlproj_content_checks_total", outcome="unique") >= 5
    assert value(samples, "crawlproj_content_duplicate_ratio") == 0


def check_frontier(samples: Samples, ips: int) -> None:
    """Queue and lease figures agree with each other and with the crawl's IPs."""
    # The gauges: the counters of the scheduler's latest script reply. A lease is held
    # from lease to ack, and an IP gets its next one only after the delay: one per IP.
    leases = value(samples, "crawlproj_frontier_leases")
    assert 0 <= leases <= ips
    # Every queued or leased URL was admitted by this worker (the only one).
    queued = value(samples, "crawlproj_frontier_queued")
    assert 0 <= queued <= value(samples, "crawlproj_urls_admitted_total") - leases
    # The counters hash, read in one HGETALL: a URL leaves the queue only by a lease or a
    # DNS drop, and re-enters it only when its lease is released or expires.
    assert value(samples, "crawlproj_lease_expired_total") == counter(samples, "lease_expired") == 0
    back = counter(samples, "released") + counter(samples, "lease_expired")
    out = counter(samples, "leased") + counter(samples, "dns_dropped")
    assert counter(samples, "queued") == counter(samples, "admitted") + back - out
    held = counter(samples, "leased") - counter(samples, "acked") - back
    assert 0 <= held <= ips
