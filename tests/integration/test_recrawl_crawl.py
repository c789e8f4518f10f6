"""Freshness end to end: `scrapy crawl web` re-visiting the test web's changing pages
with conditional GETs, and `scrapy recrawl` driving a finite re-visit."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from extensions.content.soft404 import PROBE_SUFFIX
from scripts.crawlrun import PROJECT_ROOT, per_ip_violations, run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from scripts.testweb.changes import ChangeClock
from tests.integration.edit_web import ADDRESS as EDIT_ADDRESS
from tests.integration.edit_web import HOST as EDIT_HOST
from tests.integration.edit_web import EditWeb
from tests.integration.edit_web import pages as edit_pages

DELAY = 0.2
RATE = 0.5  # changes per second of every changing page
FAST_PATHS = ("/page/1", "/page/2", "/page/3")


def changing_web() -> WebSpec:
    """Four hosts on four IPs: three pages changing every ~2 s, one page and the root
    never changing, all with ETag/Last-Modified."""
    rates = dict.fromkeys(FAST_PATHS, RATE)
    hosts = [
        HostSpec(f"news{i}.test", pages=4, validators=True, change_rates=rates) for i in range(4)
    ]
    return WebSpec(hosts=hosts, seed=11)


def page_requests(web: TestWeb) -> dict[tuple[str, str], list[dict[str, Any]]]:
    by_page: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in sorted(web.requests(), key=lambda r: r["t_start"]):
        # robots.txt and the soft-404 probe (a 404 here) are asked once, not re-crawled.
        if record["path"] != "/robots.txt" and not record["path"].endswith(PROBE_SUFFIX):
            by_page[(record["host"], record["path"])].append(record)
    return by_page


def rows_by_url(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        rows[item["url"]].append(item)
    return rows


@pytest.fixture(scope="module")
def continuous(tmp_path_factory: pytest.TempPathFactory):
    """35 s of continuous re-crawling, every URL due again 1.5 s after each visit."""
    tmp = tmp_path_factory.mktemp("fresh")
    with TestWeb(changing_web(), lifetime=300) as web:
        seeds = write_seeds(tmp / "seeds.txt", web.seeds)
        settings = {
            "DNS_HOSTS_MAP": web.hosts_map_setting(),
            "FRONTIER_DELAY": DELAY,
            "PAGESTORE_URI": f"file://{tmp}/store",
            "RECRAWL_CONTINUOUS": True,
            "RECRAWL_INTERVAL": 1.5,
            "RECRAWL_MIN_INTERVAL": 0.5,
            "RECRAWL_MAX_INTERVAL": 60,
            "RECRAWL_SCHEDULE_REFRESH": 2,
            "CLOSESPIDER_TIMEOUT": 35,
        }
        result = run_crawl(seeds, tmp / "data", settings, timeout=120)
        return web, result, page_requests(web), tmp / "store"


def test_continuous_mode_runs_until_stopped_and_stays_polite(continuous) -> None:
    web, result, by_page, _ = continuous
    assert "closespider_timeout" in result.log, result.log[-3000:]
    records = [r for visits in by_page.values() for r in visits]
    max_inflight, short_gaps = per_ip_violations(web.requests(), DELAY, slack=0.005)
    assert max_inflight == 1 and short_gaps == []
    assert all(len(visits) >= 8 for visits in by_page.values()), {
        k: len(v) for k, v in by_page.items()
    }
    assert len(records) > 150


def test_second_visits_carry_the_validators(continuous) -> None:
    _, _, by_page, _ = continuous
    assert by_page
    for visits in by_page.values():
        assert len(visits) >= 2, visits  # else the checks of later visits check nothing
        assert "inm" not in visits[0]
        assert all(v.get("inm") for v in visits[1:])
        assert all(v.get("ims") for v in visits[1:])


def test_unchanged_pages_answer_304_and_are_not_stored_again(continuous) -> None:
    _, result, by_page, store = continuous
    rows = rows_by_url(result.items)
    for (_host, path), visits in by_page.items():
        if path in FAST_PATHS:
            continue
        assert [v["status"] for v in visits] == [200] + [304] * (len(visits) - 1)
        page_rows = rows[visits[0]["url"]]
        assert [r["change"] for r in page_rows] == ["new"] + ["not_modified"] * (len(page_rows) - 1)
        assert len({r["content_ref"] for r in page_rows}) == 1  # every row: the one copy
    stored = list(store.rglob("*.html.gz"))
    refs = {r["content_ref"] for r in result.items}
    assert len(stored) == len(refs)


def test_changed_pages_are_stored_again(continuous) -> None:
    web, result, by_page, _ = continuous
    rows = rows_by_url(result.items)
    for path in FAST_PATHS:
        for host in web.hosts:
            visits = by_page[(host, path)]
            page_rows = rows[visits[0]["url"]]
            versions_fetched = [v["v"] for v in visits if v["status"] == 200]
            assert len(set(versions_fetched)) == len(versions_fetched) > 2  # 200 = new version
            changed = [r for r in page_rows if r["change"] in ("new", "changed")]
            assert len(changed) == len(versions_fetched)
            assert len({r["content_ref"] for r in changed}) == len(changed)
            assert all(Path(r["content_ref"].removeprefix("file://")).exists() for r in changed)
            # A 304 row points at the copy stored by the last 200 before it.
            current = None
            for row in page_rows:
                if row["change"] == "not_modified":
                    assert row["content_ref"] == current
                current = row["content_ref"]


def test_change_rate_estimates_converge_to_the_servers_rate(continuous) -> None:
    """Each estimate is compared with the rate its page really changed at over the
    visits the estimate is made from (the last RECRAWL_HISTORY = 16 intervals, ~24 s),
    from the test web's known change times: within a factor 2 for every page (~12
    changes each), and the median over the 12 changing pages within 25% of the
    median true rate (the nominal 0.5 changes/s; a Poisson page has quiet spells, which
    the estimate rightly follows). Pages that never change are estimated at exactly 0."""
    web, result, by_page, _ = continuous
    final: dict[str, float] = {}
    for item in result.items:
        if item["change_rate"] is not None:
            final[item["url"]] = item["change_rate"]
    static = [rate for url, rate in final.items() if not url.endswith(FAST_PATHS)]
    assert len(static) == 2 * len(web.hosts) and set(static) == {0.0}
    estimates, truths = [], []
    for (host, path), visits in by_page.items():
        if path not in FAST_PATHS:
            continue
        clock = ChangeClock(web.spec.seed, host, path, RATE, web.spec.epoch)
        start, end = visits[max(0, len(visits) - 17)]["t_end"], visits[-1]["t_end"]
        true_rate = len(clock.changes_between(start, end)) / (end - start)
        estimate = final[visits[0]["url"]]
        assert true_rate / 2 <= estimate <= true_rate * 2, (host, path, estimate, true_rate)
        estimates.append(estimate)
        truths.append(true_rate)
    assert len(estimates) == 3 * len(web.hosts)
    assert statistics.median(truths) == pytest.approx(RATE, rel=0.3)
    assert statistics.median(estimates) == pytest.approx(statistics.median(truths), rel=0.25)


def scrapy(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "scrapy", *args, "-s", f"CRAWL_DATA_DIR={data_dir}"]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)


def test_recrawl_command_makes_the_next_crawl_revisit_one_host(tmp_path: Path) -> None:
    spec = WebSpec(
        hosts=[
            HostSpec("one.test", pages=3, validators=True),
            HostSpec("two.test", pages=3, validators=True),
        ]
    )
    with TestWeb(spec, lifetime=200) as web:
        settings = {"DNS_HOSTS_MAP": web.hosts_map_setting(), "FRONTIER_DELAY": DELAY}
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        first = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        assert first.returncode == 0, first.log[-3000:]  # finite: ends by itself
        before = len(web.requests())

        status = scrapy("status", "--json", "--sample", "0", data_dir=tmp_path / "data")
        recrawl = json.loads(status.stdout)["recrawl"]
        assert recrawl["stored_urls"] == 8 and recrawl["due_now"] == 0
        assert recrawl["urls_by_change_rate"] == {"new": 8}  # fetched once: no estimate yet

        marked = scrapy("recrawl", "--host", "one.test", "--json", data_dir=tmp_path / "data")
        assert marked.returncode == 0, marked.stderr
        assert '"due_now": 4' in marked.stdout  # the root and 3 pages of one.test

        again = run_crawl(None, tmp_path / "data", settings, timeout=120)
        assert again.returncode == 0, again.log[-3000:]  # nothing left due: it ends
        revisits = web.requests()[before:]
    assert {r["host"] for r in revisits} == {"one.test"}
    assert len(revisits) == 4 and all(r["status"] == 304 and r.get("inm") for r in revisits)
    old_refs = {i["url"]: i["content_ref"] for i in first.items}
    assert len(again.items) == 4
    for row in again.items:
        assert row["change"] == "not_modified" and row["content_ref"] == old_refs[row["url"]]


def test_recrawl_command_needs_exactly_one_selector(tmp_path: Path) -> None:
    proc = scrapy("recrawl", data_dir=tmp_path / "data")
    assert proc.returncode == 2 and "exactly one of --all" in proc.stderr
    proc = scrapy("recrawl", "--all", data_dir=tmp_path / "data")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("crawlproj: crawl 'web' has no stored")


def test_sitemap_lastmod_makes_a_changed_page_due(tmp_path: Path) -> None:
    """A re-fetched sitemap whose <lastmod> for a page is newer than the stored copy
    makes that page due at once: the same finite crawl re-fetches it (and only it)."""
    spec = WebSpec(
        hosts=[
            HostSpec(
                "map.test", pages=3, validators=True, sitemap=True, change_rates={"/page/1": 0.3}
            )
        ],
        seed=5,
    )
    with TestWeb(spec, lifetime=200) as web:
        settings = {"DNS_HOSTS_MAP": web.hosts_map_setting(), "FRONTIER_DELAY": DELAY}
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        first = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        assert first.returncode == 0, first.log[-3000:]
        fetched = max(r["t_end"] for r in web.requests() if r["path"] == "/page/1")
        clock = ChangeClock(spec.seed, "map.test", "/page/1", 0.3, spec.epoch)
        # A change a whole second after our copy (lastmod has whole seconds).
        change = next(t for t in clock.changes_between(fetched, fetched + 600) if t > fetched + 1)
        time.sleep(max(0.0, change - time.time()) + 1.1)
        before = len(web.requests())

        marked = scrapy("recrawl", "--pattern", "*/sitemap.xml", data_dir=tmp_path / "data")
        assert marked.returncode == 0 and "1 stored URLs due now" in marked.stdout, marked
        again = run_crawl(None, tmp_path / "data", settings, timeout=120)
        assert again.returncode == 0, again.log[-3000:]
        revisits = web.requests()[before:]
    assert sorted(r["path"] for r in revisits) == ["/page/1", "/sitemap.xml"]
    page = next(r for r in again.items if r["url"].endswith("/page/1"))
    assert page["change"] == "changed" and page["status"] == 200
    assert "'recrawl/lastmod_due': 1" in again.log


def test_recrawl_share_splits_an_ips_fetches(tmp_path: Path) -> None:
    """Re-crawls of one host and new pages of another on the same IP: while both wait,
    the IP's fetches alternate (RECRAWL_SHARE 0.5), as the server's log shows."""
    spec = WebSpec(
        hosts=[
            HostSpec("old.test", ip_group="one", pages=11, validators=True),
            HostSpec("new.test", ip_group="one", pages=30),
        ]
    )
    with TestWeb(spec, lifetime=200) as web:
        settings = {"DNS_HOSTS_MAP": web.hosts_map_setting(), "FRONTIER_DELAY": 0.1}
        old = write_seeds(tmp_path / "old.txt", [web.url("old.test")])
        # old.test links to new.test: keep new.test out of the first crawl.
        first_settings = {**settings, "URL_BLOCKLIST": "host:new.test"}
        first = run_crawl(old, tmp_path / "data", first_settings, timeout=120)
        assert first.returncode == 0, first.log[-3000:]
        stored = {i["url"] for i in first.items}
        assert stored and all("old.test" in url for url in stored)
        for args in (("unblock", "host:new.test"), ("recrawl", "--host", "old.test")):
            done = scrapy(*args, data_dir=tmp_path / "data")
            assert done.returncode == 0, done.stderr
        before = len(web.requests())
        new_pages = [web.url("new.test", f"/page/{n}") for n in range(1, 31)]
        seeds = write_seeds(tmp_path / "new.txt", new_pages)
        again = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        assert again.returncode == 0, again.log[-3000:]
        log = [r for r in web.requests()[before:] if r["path"] != "/robots.txt"]
    kinds = ["re" if r["url"] in stored else "new" for r in log]
    assert kinds.count("re") == len(stored)
    contested = kinds[: 2 * len(stored) - 2]  # both kinds still queued
    assert abs(contested.count("re") / len(contested) - 0.5) <= 0.15, kinds


def test_a_recrawl_stores_every_text_edit_and_no_furniture_change(tmp_path: Path) -> None:
    """One added sentence or section is a change (stored again); new ads, footers,
    counters and dates around the same main text are not (not stored)."""
    with EditWeb() as web:
        settings = {"DNS_HOSTS_MAP": {EDIT_HOST: EDIT_ADDRESS}, "FRONTIER_DELAY": 0.05}
        seeds = write_seeds(tmp_path / "seeds.txt", [web.url("/")])
        first = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        assert first.returncode == 0, first.log[-3000:]
        # The layouts' own links (/about, /archive...) answer 404: not part of this.
        old = {row["url"]: row for row in first.items if row["status"] == 200}
        assert len(old) == len(edit_pages())  # the root and every page, once
        marked = scrapy("recrawl", "--all", data_dir=tmp_path / "data")
        assert marked.returncode == 0, marked.stderr
        web.revision = 1
        again = run_crawl(None, tmp_path / "data", settings, timeout=120)
        assert again.returncode == 0, again.log[-3000:]
    rows = {row["url"].rsplit("/", 1)[1]: row for row in again.items if row["url"] in old}
    assert len(rows) == len(old)
    for name, row in rows.items():
        before = old[row["url"]]
        kind = name.split("-")[0] or "none"
        if kind in ("sentence", "section"):
            assert row["change"] == "changed", (name, row)
            assert row["content_ref"] and row["content_ref"] != before["content_ref"], name
            assert row["text_hash"] != before["text_hash"], name
        else:
            assert row["change"] == "unchanged", (name, row)
            assert row["content_ref"] == before["content_ref"], name
            assert row["text_hash"] == before["text_hash"], name
        if kind != "none" and name:
            assert isinstance(row["simhash_distance"], int), name
