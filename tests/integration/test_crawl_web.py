"""`scrapy crawl web` end to end: real subprocess, real Redis, the local test web."""

from __future__ import annotations

import itertools
import json
import socket
from collections import Counter
from pathlib import Path

import pytest

from scripts.crawlrun import per_ip_violations, run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec

DELAY = 0.3


def small_web() -> WebSpec:
    """Five hosts on three IPs (two pairs share hosting), cross-linked, with a
    redirect and utm aliases; a few pages each so a crawl takes seconds."""
    return WebSpec(
        hosts=[
            HostSpec("alpha.test", pages=6, redirect=True, utm_alias=True),
            HostSpec("beta.test", ip_group="shared", pages=5),
            HostSpec("gamma.test", ip_group="shared", pages=5, utm_alias=True),
            HostSpec("delta.test", ip_group="pair", pages=4),
            HostSpec("epsilon.test", ip_group="pair", pages=4),
        ]
    )


def settings_for(web: TestWeb, **extra: object) -> dict[str, object]:
    return {"DNS_HOSTS_MAP": web.hosts_map_setting(), "FRONTIER_DELAY": DELAY, **extra}


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory):
    """One crawl of the small web, shared by the assertions below."""
    tmp = tmp_path_factory.mktemp("crawl")
    with TestWeb(small_web(), lifetime=300) as web:
        seeds = write_seeds(tmp / "seeds.txt", web.seeds)
        result = run_crawl(seeds, tmp / "data", settings_for(web))
        requests = web.requests()
    return web, result, requests


def test_crawl_finishes_by_itself_with_every_page_fetched(crawled) -> None:
    web, result, requests = crawled
    assert result.returncode == 0, result.log[-3000:]
    fetched = {r["url"] for r in requests if r["status"] == 200}
    assert set(web.pages) <= fetched
    assert "Crawl summary:" in result.log


def test_only_the_test_web_is_contacted(crawled) -> None:
    web, result, requests = crawled
    assert {r["host"] for r in requests} <= set(web.hosts)
    assert {r["server_ip"] for r in requests} <= set(web.hosts.values())
    assert all(r["status"] != 421 for r in requests), "a host reached the wrong IP"
    hosts_in_items = {item["final_url"].split("/")[2].split(":")[0] for item in result.items}
    assert hosts_in_items <= set(web.hosts)
    assert "DNS lookup failed" not in result.log


def test_one_item_per_fetched_document(crawled) -> None:
    web, result, _requests = crawled
    urls = [item["final_url"] for item in result.items]
    assert len(urls) == len(set(urls)), Counter(urls).most_common(3)
    assert set(web.pages) <= set(urls)
    item = next(i for i in result.items if i["final_url"] == web.seeds[0])
    assert item["status"] == 200 and item["depth"] == 0
    assert item["ip"] == web.hosts["alpha.test"]
    assert item["content_type"] == "text/html" and item["length"] > 0
    assert item["fetched_at"].endswith("+00:00")


def test_utm_alias_and_redirect_fetch_the_page_once(crawled) -> None:
    _web, _, requests = crawled
    paths = Counter((r["host"], r["path"]) for r in requests)
    assert not [p for p, n in paths.items() if n > 1], "a URL was fetched twice"
    assert not [p for p in paths if "utm_" in p[1]], "tracking parameters were not stripped"


def test_politeness_holds_per_ip(crawled) -> None:
    _, _, requests = crawled
    max_inflight, short_gaps = per_ip_violations(requests, DELAY)
    assert max_inflight == 1
    assert short_gaps == []


def test_twenty_hostnames_on_one_ip_are_paced_as_one_server(tmp_path: Path) -> None:
    with TestWeb(WebSpec.shared_ip(20, 2), lifetime=300) as web:
        assert len(set(web.hosts.values())) == 1
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        result = run_crawl(seeds, tmp_path / "data", settings_for(web, FRONTIER_DELAY=0.1))
        requests = web.requests()
    assert result.returncode == 0, result.log[-3000:]
    assert set(web.pages) <= {r["url"] for r in requests}
    max_inflight, short_gaps = per_ip_violations(requests, 0.1)
    assert (max_inflight, short_gaps) == (1, [])


def test_bad_seed_lines_are_reported_with_line_numbers_and_skipped(tmp_path: Path) -> None:
    with TestWeb(WebSpec(hosts=[HostSpec("solo.test", pages=2)]), lifetime=120) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(
            f"# comment line\n\nftp://files.test/x\n{web.seeds[0]}  # the good one\nnot a url\n"
        )
        result = run_crawl(seeds, tmp_path / "data", settings_for(web))
        requests = web.requests()
    assert result.returncode == 0, result.log[-3000:]
    assert f"{seeds}:3" in result.log and f"{seeds}:5" in result.log
    assert set(web.pages) <= {r["url"] for r in requests}


@pytest.mark.parametrize(
    ("seeds_arg", "message"),
    [
        ("{tmp}/missing.txt", "does not exist"),
        ("{tmp}/empty.txt", "no valid seed URL"),
        ("mailto:someone@example.org", "does not exist"),
    ],
)
def test_unusable_seeds_stop_with_one_line(tmp_path: Path, seeds_arg: str, message: str) -> None:
    (tmp_path / "empty.txt").write_text("# nothing here\nnot-a-url\n")
    result = run_crawl(seeds_arg.format(tmp=tmp_path), tmp_path / "data", {}, timeout=60)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.startswith("crawlproj:")]) == 1


def test_unreachable_redis_url_stops_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connection refused
        result = run_crawl(
            "http://solo.test/",
            tmp_path / "data",
            {"REDIS_URL": f"redis://127.0.0.1:{port}/0"},
            timeout=60,
        )
    assert result.returncode == 2
    assert f"REDIS_URL redis://127.0.0.1:{port}/0 is unreachable" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_hosts_map_stops_with_one_line(tmp_path: Path) -> None:
    result = run_crawl(
        "http://solo.test/",
        tmp_path / "data",
        {"DNS_HOSTS_MAP": json.dumps({"a.test": "nope"})},
        timeout=60,
    )
    assert result.returncode == 2
    assert "DNS_HOSTS_MAP" in result.stderr and "Traceback" not in result.stderr


def test_429_retry_after_pauses_the_ip_and_the_page_is_fetched_later(tmp_path: Path) -> None:
    spec = WebSpec(
        hosts=[
            HostSpec(
                "busy.test", pages=4, status_overrides={"/page/1": [429, {"Retry-After": "2"}, 1]}
            ),
        ]
    )
    with TestWeb(spec, lifetime=120) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        result = run_crawl(seeds, tmp_path / "data", settings_for(web, FRONTIER_DELAY=0.1))
        requests = sorted(web.requests(), key=lambda r: r["t_start"])
    assert result.returncode == 0, result.log[-3000:]
    throttled = [i for i, r in enumerate(requests) if r["status"] == 429]
    assert len(throttled) == 1
    after = requests[throttled[0] + 1]
    assert after["t_start"] - requests[throttled[0]]["t_end"] >= 2.0
    assert set(web.pages) <= {r["url"] for r in requests if r["status"] == 200}


def test_engine_is_woken_when_an_ip_comes_due(tmp_path: Path) -> None:
    # One IP, short delay: without wake-ups every fetch would wait for Scrapy's
    # 5 s engine heartbeat. The bound is generous; the stall it catches is not.
    with TestWeb(WebSpec(hosts=[HostSpec("single.test", pages=8)]), lifetime=120) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        result = run_crawl(seeds, tmp_path / "data", settings_for(web, FRONTIER_DELAY=0.2))
        requests = sorted(web.requests(), key=lambda r: r["t_start"])
    assert result.returncode == 0, result.log[-3000:]
    gaps = [b["t_start"] - a["t_end"] for a, b in itertools.pairwise(requests)]
    assert len(gaps) >= 8
    assert min(gaps) >= 0.2
    assert max(gaps) < 2.0, gaps


def test_a_host_that_does_not_resolve_pauses_itself_not_the_crawl(tmp_path: Path) -> None:
    with TestWeb(WebSpec(hosts=[HostSpec("fine.test", pages=3)]), lifetime=120) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", [*web.seeds, "http://unmapped.test/"])
        settings = settings_for(web, FRONTIER_DNS_RETRY_DELAY=0.2, FRONTIER_DNS_RETRIES=2)
        result = run_crawl(seeds, tmp_path / "data", settings)
        requests = web.requests()
    assert result.returncode == 0, result.log[-3000:]
    assert set(web.pages) <= {r["url"] for r in requests}
    assert "Dropping URLs of unmapped.test: resolution failed 3 times" in result.log
    assert "'frontier/dns/failed': 3" in result.log
