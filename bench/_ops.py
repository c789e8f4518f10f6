"""The workload and the measurements of bench_frontier_ops.py (not a benchmark itself).

- `make_urls()` / `admit_items()`: realistic URLs and the admission records the
  scheduler would send for them.
- `timed_admit()` / `lease_report()`: one client's sequential admit and lease+report
  calls, timed.
- `used_memory()` / `memory_by_family()`: Redis memory, in total and per key family.
- `scrapy_redis_reference()`: scrapy-redis 0.9.1's enqueue/dequeue on the same server.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

import redis
from scrapy import Request, Spider

from extensions.admission.admit import seen_key
from extensions.admission.records import AdmitItem, encode_request
from extensions.frontier.core import DownloadEvent, Frontier

T = TypeVar("T")

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


class _Spider(Spider):
    name = "web"

    def parse(self, response: Any) -> None:  # pragma: no cover - never called
        return None


def admit_items(urls: list[tuple[str, str, str]]) -> list[AdmitItem]:
    spider = _Spider()
    items = []
    for k, (url, host, ip) in enumerate(urls):
        request = Request(url, meta={"depth": 1 + k % 6})
        items.append(AdmitItem(seen_key(url), ip, host, 2, encode_request(request, spider)))
    return items


def batches(seq: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


async def timed_admit(frontier: Frontier, items: list[AdmitItem], size: int) -> tuple[float, int]:
    calls = 0
    start = time.perf_counter()
    for batch in batches(items, size):
        await frontier.admit(batch)
        calls += 1
    return time.perf_counter() - start, calls


class LeaseRun(NamedTuple):
    elapsed: float
    calls: int  # lease() + report() pairs
    leased: int  # requests leased
    in_lease: float  # seconds inside lease()
    in_report: float  # seconds inside report()


async def lease_report(frontier: Frontier, n: int, seconds: float) -> LeaseRun:
    """lease(n), then one report with done+ack per lease, repeated for about `seconds`
    (or until nothing is left to lease)."""
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
    return LeaseRun(time.perf_counter() - start, calls, leased, in_lease, in_report)


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


def scrapy_redis_reference(
    url: str, urls: list[tuple[str, str, str]], seconds: float
) -> dict[str, float]:
    """scrapy-redis 0.9.1's own enqueue/dequeue path on the same Redis (sync client)."""
    from scrapy_redis.dupefilter import RFPDupeFilter
    from scrapy_redis.queue import PriorityQueue

    class RefSpider(Spider):
        name = "ref"

        def parse(self, response: Any) -> None:  # pragma: no cover
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
