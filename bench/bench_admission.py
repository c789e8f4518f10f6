"""URL admission path: canonicalize + filters + record + URL-seen, then the admit round trip.

Run by hand: .venv/bin/python bench/bench_admission.py [--pages 2000] [--outlinks 100]

Prints URLs/s for the local path alone and with the batched Redis admit (one
round trip per page of outlinks, as the scheduler does), plus round trips per page.
Target: >= 20,000 URLs/s admitted, one round trip per page.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis.asyncio as aioredis  # noqa: E402
from scrapy import Request, Spider  # noqa: E402
from scrapy.settings import Settings  # noqa: E402

from extensions.admission.admit import Admission, url_filter_from_settings  # noqa: E402
from extensions.admission.canonical import Canonicalizer  # noqa: E402
from extensions.admission.prioritizer import Prioritizer  # noqa: E402
from extensions.admission.seen import UrlSeen  # noqa: E402
from extensions.dns.cache import DnsSettings, HostResolver  # noqa: E402
from extensions.frontier.config import frontier_config  # noqa: E402
from extensions.frontier.core import Frontier  # noqa: E402
from extensions.state.connection import EmbeddedRedis, find_redis_server  # noqa: E402
from extensions.state.keys import FrontierKeys  # noqa: E402
from tests.project_settings import project_settings  # noqa: E402


class BenchSpider(Spider):
    name = "bench"

    def parse(self, response):  # type: ignore[no-untyped-def]
        return None


def outlinks(rng: random.Random, page: int, n: int, hosts: int) -> list[str]:
    """Links as pages write them: relative and absolute, some tracking noise, ~30% repeats."""
    links = []
    for i in range(n):
        host = f"h{rng.randrange(hosts)}.test"
        target = rng.randrange(page * n) if page and rng.random() < 0.3 else page * n + i
        query = f"?utm_source=news&id={target}" if rng.random() < 0.1 else ""
        links.append(f"http://{host}/section/{target % 50}/article-{target}.html{query}")
    return links


def setup(settings: Settings, data_dir: Path) -> tuple[Admission, UrlSeen]:
    dns = DnsSettings.from_settings(settings)
    hosts = {f"h{i}.test": f"203.0.113.{i % 250 + 1}" for i in range(1000)}
    resolver = HostResolver(
        DnsSettings(
            hosts, True, dns.cache_ttl, dns.stale_max, dns.negative_ttl, dns.timeout, dns.policy
        )
    )
    admission = Admission(
        Canonicalizer(),
        url_filter_from_settings(settings),
        resolver,
        Prioritizer.from_settings(settings),
        5,
        False,
    )
    return admission, UrlSeen.from_settings(settings, data_dir)


async def run(args: argparse.Namespace, url: str, data_dir: Path) -> None:
    # TEST-NET-3 addresses: never contacted (nothing is fetched), allowed by policy.
    settings = project_settings(
        {"SEEN_CAPACITY": args.pages * args.outlinks * 2, "DNS_ALLOWED_NETWORKS": "203.0.113.0/24"}
    )
    admission, seen = setup(settings, data_dir)
    spider = BenchSpider()
    rng = random.Random(7)
    pages = [outlinks(rng, p, args.outlinks, 1000) for p in range(args.pages)]
    total = args.pages * args.outlinks

    started = time.perf_counter()
    batches = []
    for links in pages:
        items = [admission.item(Request(u, meta={"depth": 1}), spider) for u in links]
        send, _ = seen.split([item.seen_key for item in items])
        batches.append([items[i] for i in send])
    local_s = time.perf_counter() - started

    client = aioredis.Redis.from_url(url)
    frontier = Frontier(client, FrontierKeys("bench-admission"), frontier_config(settings))
    await client.flushall()
    round_trips = 0
    started = time.perf_counter()
    for batch in batches:
        await frontier.admit(batch)
        round_trips += 1
        seen.record([item.seen_key for item in batch])
    redis_s = time.perf_counter() - started
    stats = await frontier.stats()
    await client.aclose()
    seen.close()
    print(
        f"pages {args.pages} x {args.outlinks} outlinks = {total} URLs "
        f"({stats.get('admitted', 0)} admitted, {stats.get('duplicate', 0)} duplicates)"
    )
    print(f"local path (canonicalize+filters+record+seen): {total / local_s:10,.0f} URLs/s")
    print(f"admit round trips (batched per page):          {total / redis_s:10,.0f} URLs/s")
    print(
        f"end to end, one process:                       {total / (local_s + redis_s):10,.0f}"
        " URLs/s (target >= 20,000)"
    )
    print(
        f"Redis round trips per page of {args.outlinks} outlinks: {round_trips / args.pages:.2f}"
        " (target 1)"
    )


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
