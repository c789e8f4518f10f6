"""Frontier operations against one Redis: admit and lease+report ops/s, bytes per queued URL.

    .venv/bin/python bench/bench_frontier_ops.py [--urls 200000 --ips 2000 --seconds 3]

Drives extensions.frontier.core.Frontier directly (redis.asyncio, one connection, one
call at a time: each number is one client's sequential round trips + Lua time) on a
redis-server started here on 127.0.0.1 and stopped at the end.

1. admit, batch 100 (a page of 100 outlinks), fresh URLs: --urls realistic URLs (~70
   chars, records as the scheduler encodes them) over --ips IPs, one host per IP.
   Redis memory: INFO used_memory delta / queued URLs, and MEMORY USAGE per structure
   (URL-seen Bloom, back queues, front queues, per-IP state, heaps), all keys measured;
   the Bloom is sized for the run (SEEN_CAPACITY = the URLs admitted).
2. admit, batch 100, all duplicates (URL-seen rejects every one); admit, batch 1, fresh.
3. lease + report with FRONTIER_DELAY 0 (politeness not binding): lease(100), then one
   report with done+ack for each lease; and lease(1) + report(done, ack).
4. Reference: scrapy-redis 0.9.1 on the same server (sync client, as its scheduler
   runs): RFPDupeFilter.request_seen + PriorityQueue.push per URL, PriorityQueue.pop,
   and its bytes per queued URL; printed as ratios ours / scrapy-redis.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, redis_server, table
from _ops import (
    LeaseRun,
    admit_items,
    lease_report,
    make_urls,
    memory_by_family,
    scrapy_redis_reference,
    timed_admit,
    used_memory,
)

from extensions.frontier.core import Frontier, FrontierConfig
from extensions.state.keys import FrontierKeys
from tests.project_settings import project_frontier_config

Families = dict[str, tuple[int, int, int]]  # family -> (keys, bytes, entries)


@dataclass
class Timed:
    seconds: float
    calls: int
    urls: int


@dataclass
class Measured:
    """Everything one run measured; the tables below only format it."""

    admit: Timed  # fresh, batch --batch
    duplicates: Timed  # batch --batch
    one_by_one: Timed  # fresh, batch 1
    lease_batch: LeaseRun
    lease_one: LeaseRun
    ref: dict[str, float]  # scrapy_redis_reference()
    mean_url: float
    mean_record: float
    memory_delta: int  # INFO used_memory after admitting - before
    families: Families  # after admitting
    families_after_lease: Families
    queued: Any  # the frontier's own stats()["queued"]
    active: int  # IPs holding a back queue


async def warm_up(client: aioredis.Redis, config: FrontierConfig, sync: redis.Redis) -> int:
    """Load the scripts and let Redis settle, then empty the database; its used_memory."""
    warm = Frontier(client, FrontierKeys("warm"), config)
    await warm.admit(admit_items(make_urls(100, 10, seed=1)))
    await warm.lease(10)
    sync.flushall()
    return used_memory(sync)


async def measure(args: argparse.Namespace, url: str) -> Measured:
    sync = redis.Redis.from_url(url)
    client = aioredis.Redis.from_url(url)
    keys = FrontierKeys("bench")
    config = project_frontier_config(delay=0.0, back_queues=args.back_queues, lease_ttl=60)
    # URL-seen's Bloom sized for this run, as SEEN_CAPACITY would be for a crawl this size.
    seen = replace(config.seen, capacity=args.urls + args.batch1_urls)
    config = replace(config, seen=seen)
    frontier = Frontier(client, keys, config)

    print(f"... generating {args.urls:,} URLs over {args.ips} IPs", flush=True)
    urls = make_urls(args.urls + args.batch1_urls, args.ips)
    items = admit_items(urls[: args.urls])
    extra = admit_items(urls[args.urls :])
    base = await warm_up(client, config, sync)

    print(f"... admitting {args.urls:,} URLs in batches of {args.batch}", flush=True)
    admit = Timed(*await timed_admit(frontier, items, args.batch), len(items))
    after = used_memory(sync)
    families = memory_by_family(sync, keys.prefix)
    stats = await frontier.stats()
    active = sync.scard(keys.key("active"))

    print("... admitting duplicates, batch 1, then lease/report", flush=True)
    dup_items = items[: args.dup_urls]
    duplicates = Timed(*await timed_admit(frontier, dup_items, args.batch), len(dup_items))
    one_by_one = Timed(*await timed_admit(frontier, extra, 1), len(extra))
    lease_batch = await lease_report(frontier, args.batch, args.seconds)
    lease_one = await lease_report(frontier, 1, args.seconds)
    families_after_lease = memory_by_family(sync, keys.prefix)

    print("... scrapy-redis reference", flush=True)
    ref = scrapy_redis_reference(url, urls[: args.ref_urls], args.seconds)
    await client.aclose()
    sync.close()
    return Measured(
        admit=admit,
        duplicates=duplicates,
        one_by_one=one_by_one,
        lease_batch=lease_batch,
        lease_one=lease_one,
        ref=ref,
        mean_url=sum(len(u) for u, _, _ in urls[: args.urls]) / args.urls,
        mean_record=sum(len(i.record) for i in items) / len(items),
        memory_delta=after - base,
        families=families,
        families_after_lease=families_after_lease,
        queued=stats.get("queued"),
        active=active,
    )


def op_row(
    label: str, batch: int, run: Timed, ref_per_s: float | None, ratio_spec: str = ".1f"
) -> list[Any]:
    """calls/s, URLs/s, us/URL and (with a reference rate) the ratio to scrapy-redis."""
    per_s = run.urls / run.seconds
    ratio = "" if ref_per_s is None else f"{per_s / ref_per_s:{ratio_spec}}x"
    micros = 1e6 * run.seconds / max(1, run.urls)
    return [
        label,
        batch,
        f"{run.calls / run.seconds:,.0f}",
        f"{per_s:,.0f}",
        f"{micros:.1f}",
        ratio,
    ]


def ops_rows(m: Measured, batch: int) -> list[list[Any]]:
    push, pop = m.ref["push_per_s"], m.ref["pop_per_s"]
    leases = [Timed(lr.elapsed, lr.calls, lr.leased) for lr in (m.lease_batch, m.lease_one)]
    label = "lease + report(done,ack)"
    return [
        op_row("admit fresh", batch, m.admit, push),
        op_row("admit duplicates", batch, m.duplicates, None),
        op_row("admit fresh", 1, m.one_by_one, push, ".2f"),
        op_row(label, batch, leases[0], pop),
        op_row(label, 1, leases[1], pop, ".2f"),
        [
            "scrapy-redis seen+push (ref)",
            1,
            f"{push:,.0f}",
            f"{push:,.0f}",
            f"{1e6 / push:.1f}",
            "1",
        ],
        ["scrapy-redis pop (ref)", 1, f"{pop:,.0f}", f"{pop:,.0f}", f"{1e6 / pop:.1f}", "1"],
    ]


def print_ops(m: Measured, args: argparse.Namespace) -> None:
    print()
    print(
        f"== Frontier ops on one Redis (one client, sequential calls; delay 0; "
        f"{args.ips} IPs, FRONTIER_BACK_QUEUES={args.back_queues}) =="
    )
    headers = ["operation", "batch", "calls/s", "URLs/s", "us/URL", "vs scrapy-redis"]
    print(table(headers, ops_rows(m, args.batch)))
    print(
        "  calls/s for lease+report counts one lease() plus its report() as one call; "
        "the scheduler does these in the background, batched, never per engine tick."
    )
    for label, lr in ((f"batch {args.batch}", m.lease_batch), ("batch 1", m.lease_one)):
        if lr.calls:
            print(
                f"  lease+report {label}: {1e3 * lr.in_lease / lr.calls:.2f} ms per lease() call, "
                f"{1e3 * lr.in_report / lr.calls:.2f} ms per report() call (client round trip "
                "included)"
            )
    print(
        f"  scrapy-redis ref: {m.ref['n']:,.0f} URLs, RFPDupeFilter.request_seen (SADD) + "
        "PriorityQueue.push (pickle + ZADD) per URL, pop = MULTI ZRANGE+ZREMRANGEBYRANK."
    )


FAMILY_ORDER = ["bloom", "seen", "bq", "front", "ip", "ready", "active", "stats", "lease_seq"]


def memory_rows(m: Measured, n: int) -> list[list[Any]]:
    families = m.families
    total_keys = sum(v[1] for v in families.values())
    rows: list[list[Any]] = []
    order = sorted(families, key=lambda f: FAMILY_ORDER.index(f) if f in FAMILY_ORDER else 99)
    for fam in order:
        count, size, entries = families[fam]
        per_entry = f"{size / max(1, entries):.1f}"
        share = f"{100 * size / max(1, total_keys):.0f}%"
        rows.append([fam, count, f"{entries:,}", f"{size:,}", per_entry, f"{size / n:.1f}", share])
    keys = sum(v[0] for v in families.values())
    rows.append(
        [
            "all keys (MEMORY USAGE)",
            keys,
            "",
            f"{total_keys:,}",
            "",
            f"{total_keys / n:.1f}",
            "100%",
        ]
    )
    delta = m.memory_delta
    rows.append(["INFO used_memory delta", "", "", f"{delta:,}", "", f"{delta / n:.1f}", ""])
    ref = m.ref
    split = f"zset {ref['zset'] / ref['n']:.0f}, set {ref['seen'] / ref['n']:.0f}"
    ref_per = ref["mem"] / ref["n"]
    rows.append(
        [
            *("scrapy-redis (ref) used_memory delta", 2, f"{ref['n']:,.0f} x2"),
            *(f"{ref['mem']:,.0f}", split, f"{ref_per:.1f}", ""),
        ]
    )
    return rows


def print_memory(m: Measured, n: int) -> None:
    print()
    print(
        f"== Redis memory per queued URL ({n:,} URLs, mean URL {m.mean_url:.0f} chars, "
        f"mean record {m.mean_record:.0f} B; {m.active} IPs hold a back queue, "
        f"queued={m.queued}) =="
    )
    headers = ["structure", "keys", "entries", "bytes", "B/entry", "B/queued URL", "share"]
    print(table(headers, memory_rows(m, n)))
    ip_state = m.families_after_lease.get("ip")
    if ip_state:
        print(
            f"  per-IP politeness state (created at first lease, per IP not per URL): "
            f"{ip_state[0]} ip:* hashes, {ip_state[1] / ip_state[0]:.0f} B each; "
            f"leases in flight: lease_data/lease_dl/leases hold only leased requests."
        )
    delta, total_keys = m.memory_delta, sum(v[1] for v in m.families.values())
    # URL-seen: the Bloom's bitmaps ("bloom") and, with SEEN_EXACT, the exact set ("seen").
    seen = sum(m.families.get(family, (0, 0))[1] for family in ("bloom", "seen"))
    print(
        f"  ours: {delta / n:.1f} B/URL (target <= 100), of which URL-seen "
        f"{seen / n:.1f} B/URL ({100 * seen / max(1, total_keys):.0f}% of key memory); "
        f"ours / scrapy-redis bytes per URL = {(delta / n) / (m.ref['mem'] / m.ref['n']):.2f}"
    )
    print(
        "  front-queue entries carry 'ip|' before the record (IPs without a back queue); "
        "Redis 6.2 (libc malloc) here: small lists are ziplists, sets of strings hashtables."
    )


async def run(args: argparse.Namespace, url: str) -> None:
    measured = await measure(args, url)
    print_ops(measured, args)
    print_memory(measured, args.urls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=200_000, help="URLs admitted (memory)")
    parser.add_argument("--ips", type=int, default=2000, help="IPs the URLs spread over")
    parser.add_argument("--back-queues", type=int, default=1024, help="FRONTIER_BACK_QUEUES")
    parser.add_argument("--batch", type=int, default=100, help="admit/lease batch size")
    parser.add_argument("--dup-urls", type=int, default=50_000, help="duplicates re-admitted")
    parser.add_argument("--batch1-urls", type=int, default=5_000, help="URLs admitted one by one")
    parser.add_argument("--ref-urls", type=int, default=20_000, help="scrapy-redis reference URLs")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per lease/pop test")
    args = parser.parse_args()
    print("bench_frontier_ops: extensions.frontier.core.Frontier on a local redis-server")
    print(NOISE_NOTE)
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="bench-ops-") as tmp,
        redis_server(Path(tmp)) as url,
    ):
        version = redis.Redis.from_url(url).info("server")["redis_version"]
        print(f"redis-server {version} at {url}")
        asyncio.run(run(args, url))
    print(f"total bench time {time.monotonic() - started:.0f}s")
    print(NOISE_NOTE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
