"""URL admission path: repeats of recent links dropped (admission/recent.py), then
canonicalize + filters + prioritizer + patterns + record, then the admit round trip
(URL-seen's Bloom filter in Redis).

Run by hand: .venv/bin/python bench/bench_admission.py [--pages 2000] [--outlinks 100]

~30% of a page's links repeat a link of an earlier page (same URL, as navigation
repeats). Links come as the spider yields them: Requests stamped by SourceMiddleware (source
"link", the parent page's score and URL), built before the clock starts (their cost is
the spider's, printed apart). Prints URLs/s for the local path alone, for the batched
admit round trips alone (one per page), and end to end through the scheduler's own
Batches: enqueue per request and a background flush, so a round trip overlaps the next
pages' local path as in a crawl (the engine runs the spider while the flush awaits).
Target: >= 20,000 URLs/s end to end, <= 1 round trip per page.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis.asyncio as aioredis  # noqa: E402
from scrapy import Request, Spider  # noqa: E402
from scrapy.settings import Settings  # noqa: E402

from extensions.admission.admit import Admission, url_filter_from_settings  # noqa: E402
from extensions.admission.canonical import Canonicalizer  # noqa: E402
from extensions.admission.new_items import NEW_ITEMS  # noqa: E402
from extensions.admission.prioritizer import PARENT_META, SOURCE_META, Prioritizer  # noqa: E402
from extensions.admission.recent import RecentLinks  # noqa: E402
from extensions.config import read  # noqa: E402
from extensions.dns.cache import DnsSettings, HostResolver  # noqa: E402
from extensions.frontier.background import Background  # noqa: E402
from extensions.frontier.batching import Batches  # noqa: E402
from extensions.frontier.config import frontier_config  # noqa: E402
from extensions.frontier.core import Frontier  # noqa: E402
from extensions.state.connection import EmbeddedRedis, find_redis_server  # noqa: E402
from extensions.state.keys import FrontierKeys  # noqa: E402
from tests.project_settings import project_settings  # noqa: E402


class BenchSpider(Spider):
    name = "bench"

    def parse(self, response: object) -> None:
        return None


def outlinks(rng: random.Random, page: int, n: int, hosts: int) -> list[str]:
    """Links as pages write them: relative and absolute, some tracking noise, ~30% repeats."""
    links = []
    for i in range(n):
        target = rng.randrange(page * n) if page and rng.random() < 0.3 else page * n + i
        host = f"h{target % hosts}.test"  # a repeat is the same link, host included
        query = f"?utm_source=news&id={target}" if rng.random() < 0.1 else ""
        links.append(f"http://{host}/section/{target % 50}/article-{target}.html{query}")
    return links


def page_requests(links: list[str], page: int, hosts: int) -> list[Request]:
    """A page's outlinks as SourceMiddleware stamps them (a link, its parent's score/URL)."""
    parent = (50, f"http://h{page % hosts}.test/section/{page % 50}/article-{page}.html")
    return [Request(u, meta={"depth": 1, SOURCE_META: "link", PARENT_META: parent}) for u in links]


class Stats(Counter[str]):
    """The stats collector's one method Batches uses."""

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self[key] += count


class Unparked:
    """Every bench host resolves: the admit reply parks none."""

    def resolve_all(self, hosts: list[str]) -> None:
        assert not hosts, hosts


def setup(settings: Settings) -> tuple[Admission, RecentLinks]:
    dns = DnsSettings.from_settings(settings)
    hosts = {f"h{i}.test": f"203.0.113.{i % 250 + 1}" for i in range(1000)}
    resolver = HostResolver(dataclasses.replace(dns, hosts_map=hosts, map_only=True))
    admission = Admission(
        Canonicalizer(),
        url_filter_from_settings(settings),
        resolver,
        Prioritizer.from_settings(settings),
        5,
        False,
    )
    return admission, RecentLinks(admission, settings.getint("SEEN_LOCAL_CACHE"))


async def run(args: argparse.Namespace, url: str, data_dir: Path) -> None:
    # TEST-NET-3 addresses: never contacted (nothing is fetched), allowed by policy.
    settings = project_settings(
        {"SEEN_CAPACITY": args.pages * args.outlinks * 2, "DNS_ALLOWED_NETWORKS": "203.0.113.0/24"}
    )
    spider = BenchSpider()
    rng = random.Random(7)
    links = [outlinks(rng, p, args.outlinks, 1000) for p in range(args.pages)]
    total = args.pages * args.outlinks
    started = time.perf_counter()
    pages = [page_requests(page, p, 1000) for p, page in enumerate(links)]
    requests_s = time.perf_counter() - started

    local_s, batches = local_path(settings, pages, spider)
    client = aioredis.Redis.from_url(url)
    frontier = Frontier(client, FrontierKeys("bench-admission"), frontier_config(settings))
    await client.flushall()
    started = time.perf_counter()
    for batch in batches:
        await frontier.admit(batch)
    redis_s = time.perf_counter() - started
    del batches

    await client.flushall()
    end_s, stats = await scheduler_path(settings, pages, spider, frontier)
    counts = await frontier.stats()
    await client.aclose()
    print(
        f"pages {args.pages} x {args.outlinks} outlinks = {total} URLs "
        f"({counts.get('admitted', 0)} admitted, {counts.get('duplicate', 0)} duplicates)"
    )
    print(f"Request() as the spider builds them (not timed below): {total / requests_s:10,.0f}/s")
    print(f"local path (repeats dropped, canonicalize..record): {total / local_s:10,.0f} URLs/s")
    print(f"admit round trips alone (one per page):      {total / redis_s:10,.0f} URLs/s")
    print(
        f"end to end, scheduler's Batches, one process: {total / end_s:10,.0f}"
        " URLs/s (target >= 20,000)"
    )
    trips = stats["frontier/round_trips/admit"]
    print(f"Redis round trips per page of {args.outlinks} outlinks: {trips / args.pages:.2f}")


def local_path(
    settings: Settings, pages: list[list[Request]], spider: Spider
) -> tuple[float, list[list[Any]]]:
    admission, recent = setup(settings)
    started = time.perf_counter()
    batches = []
    for requests in pages:
        items = []
        for request in requests:
            if recent.repeats(request):
                continue
            item = admission.item(request, spider)
            recent.add(request, item)
            items.append(item)
        batches.append(items)
    elapsed = time.perf_counter() - started
    return elapsed, batches


async def scheduler_path(
    settings: Settings,
    pages: list[list[Request]],
    spider: Spider,
    frontier: Frontier,
) -> tuple[float, Stats]:
    """FrontierScheduler.enqueue_request's path: Batches.enqueue per request, its
    background flush loop sending what gathered; the loop gets a turn after each page,
    as the reactor does between responses."""
    admission, recent = setup(settings)
    stats = Stats()
    closed: list[str] = []

    async def close_spider_async(reason: str) -> None:  # Background gives up on Redis
        closed.append(reason)

    engine = SimpleNamespace(_slot=None, close_spider_async=close_spider_async)  # nothing to wake
    background = Background(engine, stats, 3)  # type: ignore[arg-type]
    batches = Batches(
        frontier=frontier,
        spider=spider,
        admission=admission,
        recent=recent,
        background=background,
        note=lambda reply: None,
        parked=Unparked(),  # type: ignore[arg-type]
        feeder=None,
        on_recrawl_due=lambda: None,
        clock=time.time,
        new_items=read(NEW_ITEMS, settings).least,
    )
    started = time.perf_counter()
    for requests in pages:
        for request in requests:
            batches.enqueue(request)
        await asyncio.sleep(0)
    await batches.wait()
    elapsed = time.perf_counter() - started
    if closed or stats["frontier/script_errors"] or stats["frontier/redis_errors"]:
        raise SystemExit(f"bench_admission: Redis failed during the run ({closed}, {dict(stats)})")
    return elapsed, stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--outlinks", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedRedis(Path(tmp) / "redis", find_redis_server())
        server.start()
        try:
            asyncio.run(run(args, server.url, Path(tmp)))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
