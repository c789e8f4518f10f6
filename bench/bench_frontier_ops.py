"""Frontier operations against one Redis: admit and lease+report ops/s, bytes per queued URL.

    .venv/bin/python bench/bench_frontier_ops.py [--urls 200000 --ips 2000 --seconds 3]

Drives extensions.frontier.core.Frontier directly (redis.asyncio, one connection, one
call at a time: each number is one client's sequential round trips + Lua time) on a
redis-server started here on 127.0.0.1 and stopped at the end.

1. admit, batch 100 (a page of 100 outlinks), fresh URLs: --urls realistic URLs (~70
   chars, records as the scheduler encodes them) over --ips IPs, one host per IP.
   Redis memory: INFO used_memory delta / queued URLs, and MEMORY USAGE per structure
   (seen set, back queues, front queues, per-IP state, heaps), all keys measured.
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
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import redis
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, redis_server, table

from extensions.admission.admit import seen_key
from extensions.admission.records import AdmitItem, encode_request
from extensions.frontier.core import DownloadEvent, Frontier, FrontierConfig
from extensions.state.keys import FrontierKeys

SECTIONS = ["news", "sport", "products", "blog", "category", "articles", "docs", "shop", "tag"]
WORDS = [
    "river",
    "garden",
    "copper",
    "summit",
    "harbor",
    "meadow",
    "falcon",
    "quartz",
    "lantern",
    "orbit",
    "saffron",
    "willow",
    "glacier",
    "prairie",
    "beacon",
    "ember",
]


def make_urls(n: int, n_ips: int, seed: int = 7) -> list[tuple[str, str, str]]:
    """(url, host, ip): realistic ~70-char URLs, spread evenly over n_ips IPs."""
    rng = random.Random(seed)
    hosts = [f"www.{rng.choice(WORDS)}{i}.example.com" for i in range(n_ips)]
    ips = [f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}" for i in range(n_ips)]
    out = []
    for k in range(n):
        i = k % n_ips
        slug = "-".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        path = f"/{rng.choice(SECTIONS)}/{2020 + k % 6}/{k % 12 + 1:02d}/{slug}-{k}.html"
        out.append((f"https://{hosts[i]}{path}", hosts[i], ips[i]))
    return out


class _Spider:
    name = "web"

    def parse(self, response):  # pragma: no cover - never called
        return None


def admit_items(urls: list[tuple[str, str, str]]) -> list[AdmitItem]:
    from scrapy import Request

    spider = _Spider()
    items = []
    for k, (url, host, ip) in enumerate(urls):
        request = Request(url, meta={"depth": 1 + k % 6})
        items.append(AdmitItem(seen_key(url), ip, host, 2, encode_request(request, spider)))
    return items


def batches(seq: list, size: int):
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


async def timed_admit(frontier: Frontier, items: list[AdmitItem], size: int) -> tuple[float, int]:
    calls = 0
    start = time.perf_counter()
    for batch in batches(items, size):
        await frontier.admit(batch)
        calls += 1
    return time.perf_counter() - start, calls


async def lease_report(
    frontier: Frontier, n: int, seconds: float
) -> tuple[float, int, int, float, float]:
    """(elapsed, calls (lease+report pairs), requests leased, time in lease, time in
    report) for about `seconds`."""
    calls = leased = 0
    in_lease = in_report = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        reply = await frontier.lease(n)
        in_lease += time.perf_counter() - t
        now = time.time()
        events = []
        for lease_id, _ in reply.leases:
            events += [
                DownloadEvent("done", lease_id, now, 200),
                DownloadEvent("ack", lease_id, now),
            ]
        t = time.perf_counter()
        if events:
            await frontier.report(events)
        in_report += time.perf_counter() - t
        calls += 1
        leased += len(reply.leases)
        if not reply.leases:
            break
    return time.perf_counter() - start, calls, leased, in_lease, in_report


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


_LENGTH = {b"list": "llen", b"set": "scard", b"zset": "zcard", b"hash": "hlen"}


def memory_by_family(client: redis.Redis, prefix: str) -> dict[str, tuple[int, int, int]]:
    """family -> (keys, bytes, entries) from MEMORY USAGE ... SAMPLES 0 over every key of
    the crawl; entries = list/set/zset/hash lengths summed (1 per string key)."""
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    sizes: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for chunk in batches(keys, 500):
        pipe = client.pipeline(transaction=False)
        for key in chunk:
            pipe.memory_usage(key, samples=0)
            pipe.type(key)
        answers = pipe.execute()
        pipe = client.pipeline(transaction=False)
        for key, kind in zip(chunk, answers[1::2], strict=True):
            cmd = _LENGTH.get(kind)
            if cmd:
                getattr(pipe, cmd)(key)
            else:
                pipe.exists(key)
        for key, size, length in zip(chunk, answers[0::2], pipe.execute(), strict=True):
            family = key.decode()[len(prefix) + 1 :].split(":", 1)[0]
            sizes[family][0] += 1
            sizes[family][1] += int(size or 0)
            sizes[family][2] += int(length or 0)
    return {k: (v[0], v[1], v[2]) for k, v in sizes.items()}


def scrapy_redis_reference(url: str, urls: list[tuple[str, str, str]], seconds: float) -> dict:
    """scrapy-redis 0.9.1's own enqueue/dequeue path on the same Redis (sync client)."""
    from scrapy import Request, Spider
    from scrapy_redis.dupefilter import RFPDupeFilter
    from scrapy_redis.queue import PriorityQueue

    class RefSpider(Spider):
        name = "ref"

        def parse(self, response):  # pragma: no cover
            return None

    client = redis.Redis.from_url(url)
    spider = RefSpider()
    queue = PriorityQueue(client, spider, "%(spider)s:requests")
    dupefilter = RFPDupeFilter(client, "ref:dupefilter")
    requests = [
        Request(u, callback=spider.parse, meta={"depth": 1 + k % 6})
        for k, (u, _, _) in enumerate(urls)
    ]
    base = used_memory(client)
    start = time.perf_counter()
    for request in requests:
        if not dupefilter.request_seen(request):
            queue.push(request)
    push_s = time.perf_counter() - start
    mem = used_memory(client) - base
    zset = client.memory_usage("ref:requests", samples=0) or 0
    seen = client.memory_usage("ref:dupefilter", samples=0) or 0
    start = time.perf_counter()
    popped = 0
    while time.perf_counter() - start < seconds and queue.pop() is not None:
        popped += 1
    pop_s = time.perf_counter() - start
    client.delete("ref:requests", "ref:dupefilter")
    client.close()
    n = len(requests)
    return {
        "n": n,
        "push_per_s": n / push_s,
        "pop_per_s": popped / pop_s,
        "mem": mem,
        "zset": zset,
        "seen": seen,
    }


async def run(args: argparse.Namespace, url: str) -> None:
    sync = redis.Redis.from_url(url)
    client = aioredis.Redis.from_url(url)
    keys = FrontierKeys("bench")
    config = FrontierConfig(delay=0.0, back_queues=args.back_queues, lease_ttl=60)
    frontier = Frontier(client, keys, config)

    print(f"... generating {args.urls:,} URLs over {args.ips} IPs", flush=True)
    urls = make_urls(args.urls + args.batch1_urls, args.ips)
    items = admit_items(urls[: args.urls])
    extra = admit_items(urls[args.urls :])
    mean_url = sum(len(u) for u, _, _ in urls[: args.urls]) / args.urls
    mean_rec = sum(len(i.record) for i in items) / len(items)

    # Load the scripts and let Redis settle, then start from an empty database.
    warm = Frontier(client, FrontierKeys("warm"), config)
    await warm.admit(admit_items(make_urls(100, 10, seed=1)))
    await warm.lease(10)
    sync.flushall()
    base = used_memory(sync)

    print(f"... admitting {args.urls:,} URLs in batches of {args.batch}", flush=True)
    admit_s, admit_calls = await timed_admit(frontier, items, args.batch)
    after = used_memory(sync)
    families = memory_by_family(sync, keys.prefix)
    stats = await frontier.stats()
    active = sync.scard(keys.key("active"))

    print("... admitting duplicates, batch 1, then lease/report", flush=True)
    dup_items = items[: args.dup_urls]
    dup_s, dup_calls = await timed_admit(frontier, dup_items, args.batch)
    one_s, one_calls = await timed_admit(frontier, extra, 1)
    lr100 = await lease_report(frontier, args.batch, args.seconds)
    lr1 = await lease_report(frontier, 1, args.seconds)
    after_lease = memory_by_family(sync, keys.prefix)

    print("... scrapy-redis reference", flush=True)
    ref = scrapy_redis_reference(url, urls[: args.ref_urls], args.seconds)
    await client.aclose()
    sync.close()

    n = args.urls
    print()
    print(
        f"== Frontier ops on one Redis (one client, sequential calls; delay 0; "
        f"{args.ips} IPs, FRONTIER_BACK_QUEUES={args.back_queues}) =="
    )
    ours_admit = n / admit_s
    ours_lease = lr100[2] / lr100[0]
    rows = [
        [
            "admit fresh",
            args.batch,
            f"{admit_calls / admit_s:,.0f}",
            f"{ours_admit:,.0f}",
            f"{1e6 * admit_s / n:.1f}",
            f"{ours_admit / ref['push_per_s']:.1f}x",
        ],
        [
            "admit duplicates",
            args.batch,
            f"{dup_calls / dup_s:,.0f}",
            f"{len(dup_items) / dup_s:,.0f}",
            f"{1e6 * dup_s / len(dup_items):.1f}",
            "",
        ],
        [
            "admit fresh",
            1,
            f"{one_calls / one_s:,.0f}",
            f"{len(extra) / one_s:,.0f}",
            f"{1e6 * one_s / len(extra):.1f}",
            f"{len(extra) / one_s / ref['push_per_s']:.2f}x",
        ],
        [
            "lease + report(done,ack)",
            args.batch,
            f"{lr100[1] / lr100[0]:,.0f}",
            f"{ours_lease:,.0f}",
            f"{1e6 * lr100[0] / max(1, lr100[2]):.1f}",
            f"{ours_lease / ref['pop_per_s']:.1f}x",
        ],
        [
            "lease + report(done,ack)",
            1,
            f"{lr1[1] / lr1[0]:,.0f}",
            f"{lr1[2] / lr1[0]:,.0f}",
            f"{1e6 * lr1[0] / max(1, lr1[2]):.1f}",
            f"{lr1[2] / lr1[0] / ref['pop_per_s']:.2f}x",
        ],
        [
            "scrapy-redis seen+push (ref)",
            1,
            f"{ref['push_per_s']:,.0f}",
            f"{ref['push_per_s']:,.0f}",
            f"{1e6 / ref['push_per_s']:.1f}",
            "1",
        ],
        [
            "scrapy-redis pop (ref)",
            1,
            f"{ref['pop_per_s']:,.0f}",
            f"{ref['pop_per_s']:,.0f}",
            f"{1e6 / ref['pop_per_s']:.1f}",
            "1",
        ],
    ]
    print(table(["operation", "batch", "calls/s", "URLs/s", "us/URL", "vs scrapy-redis"], rows))
    print(
        "  calls/s for lease+report counts one lease() plus its report() as one call; "
        "the scheduler does these in the background, batched, never per engine tick."
    )
    for label, lr in ((f"batch {args.batch}", lr100), ("batch 1", lr1)):
        if lr[1]:
            print(
                f"  lease+report {label}: {1e3 * lr[3] / lr[1]:.2f} ms per lease() call, "
                f"{1e3 * lr[4] / lr[1]:.2f} ms per report() call (client round trip included)"
            )
    print(
        f"  scrapy-redis ref: {ref['n']:,} URLs, RFPDupeFilter.request_seen (SADD) + "
        "PriorityQueue.push (pickle + ZADD) per URL, pop = MULTI ZRANGE+ZREMRANGEBYRANK."
    )

    print()
    print(
        f"== Redis memory per queued URL ({n:,} URLs, mean URL {mean_url:.0f} chars, "
        f"mean record {mean_rec:.0f} B; {active} IPs hold a back queue, "
        f"queued={stats.get('queued')}) =="
    )
    delta = after - base
    rows = []
    order = ["seen", "bq", "front", "ip", "ready", "active", "stats", "lease_seq"]
    total_keys = sum(v[1] for v in families.values())
    for fam in sorted(families, key=lambda f: order.index(f) if f in order else 99):
        count, size, entries = families[fam]
        rows.append(
            [
                fam,
                count,
                f"{entries:,}",
                f"{size:,}",
                f"{size / max(1, entries):.1f}",
                f"{size / n:.1f}",
                f"{100 * size / max(1, total_keys):.0f}%",
            ]
        )
    rows.append(
        [
            "all keys (MEMORY USAGE)",
            sum(v[0] for v in families.values()),
            "",
            f"{total_keys:,}",
            "",
            f"{total_keys / n:.1f}",
            "100%",
        ]
    )
    rows.append(["INFO used_memory delta", "", "", f"{delta:,}", "", f"{delta / n:.1f}", ""])
    ref_per = ref["mem"] / ref["n"]
    rows.append(
        [
            "scrapy-redis (ref) used_memory delta",
            2,
            f"{ref['n']:,} x2",
            f"{ref['mem']:,}",
            f"zset {ref['zset'] / ref['n']:.0f}, set {ref['seen'] / ref['n']:.0f}",
            f"{ref_per:.1f}",
            "",
        ]
    )
    print(
        table(["structure", "keys", "entries", "bytes", "B/entry", "B/queued URL", "share"], rows)
    )
    ip_state = after_lease.get("ip")
    if ip_state:
        print(
            f"  per-IP politeness state (created at first lease, per IP not per URL): "
            f"{ip_state[0]} ip:* hashes, {ip_state[1] / ip_state[0]:.0f} B each; "
            f"leases in flight: lease_data/lease_dl/leases hold only leased requests."
        )
    seen = families.get("seen", (0, 0))[1]
    print(
        f"  ours: {delta / n:.1f} B/URL (target <= 200), of which the seen set "
        f"{seen / n:.1f} B/URL ({100 * seen / max(1, total_keys):.0f}% of key memory); "
        f"ours / scrapy-redis bytes per URL = {(delta / n) / ref_per:.2f}"
    )
    print(
        "  front-queue entries carry 'ip|' before the record (IPs without a back queue); "
        "Redis 6.2 (libc malloc) here: small lists are ziplists, sets of strings hashtables."
    )


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
