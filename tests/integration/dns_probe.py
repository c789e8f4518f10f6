"""Resolve names again and again with the crawl's resolver, on the crawl's reactor.

    python -m tests.integration.dns_probe --settings '{"DNS_SERVERS": ...}' \
        --redis URL --names a.test,b.test --every 0.05 --for 4

Builds HostResolver (extensions/dns/cache.py) from the project's settings plus the given
ones, with the shared Redis cache when --redis is given, resolves each name every
--every seconds for --for seconds, and prints one JSON line per answer,
{"t", "name", "ip"} or {"t", "name", "error": cause}, then {"stats": {...}}. A subprocess,
so the test process never starts a reactor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from typing import Any

from scrapy.utils.reactor import install_reactor


class Stats:
    def __init__(self) -> None:
        self.values: Counter[str] = Counter()

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] += count


async def probe(args: argparse.Namespace) -> None:
    import redis.asyncio as aioredis

    from extensions.dns.cache import DnsSettings, HostResolver
    from extensions.dns.lookup import cause_of
    from extensions.dns.policy import AddressRefused
    from extensions.state.keys import FrontierKeys
    from tests.project_settings import project_settings

    settings = DnsSettings.from_settings(project_settings(json.loads(args.settings)))
    client = aioredis.Redis.from_url(args.redis) if args.redis else None
    stats = Stats()
    resolver = HostResolver(settings, client, FrontierKeys("dnsprobe").dns, stats)
    names = args.names.split(",")
    end = time.time() + args.duration
    while time.time() < end:
        for name in names:
            row: dict[str, Any] = {"t": time.time(), "name": name}
            try:
                row["ip"] = await resolver.resolve(name)
            except AddressRefused as exc:
                row["error"] = f"refused/{exc.reason}"
            except Exception as exc:  # a DNS failure, by cause
                row["error"] = cause_of(exc)
            print(json.dumps(row), flush=True)
        await asyncio.sleep(args.every)
    print(json.dumps({"stats": dict(stats.values)}), flush=True)
    if client is not None:
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--settings", default="{}")
    parser.add_argument("--redis", default="")
    parser.add_argument("--names", required=True)
    parser.add_argument("--every", type=float, default=0.05)
    parser.add_argument("--for", dest="duration", type=float, default=3.0)
    args = parser.parse_args()
    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    from scrapy.utils.defer import deferred_from_coro
    from twisted.internet import task

    task.react(lambda _reactor: deferred_from_coro(probe(args)))


if __name__ == "__main__":
    main()
