"""The workload and the measurements of bench_frontier_ops.py (not a benchmark itself).

- `make_urls()` / `admit_items()`: realistic URLs and the admission records the
  scheduler would send for them.
- `timed_admit()` / `lease_report()`: one client's sequential admit and lease+report
  calls, timed.
- `used_memory()` / `memory_by_family()`: Redis memory, in total and per key family.
- `scrapy_redis_reference()`: scrapy-redis 0.9.1's enqueue/dequeue on the same server.
- For bench_scale.py: `iter_urls()` / `LinkItems` stream millions of URLs and their
  admission items without a Request per URL; `bloom_probe()` looks keys up in the Bloom
  without inserting them; `redis_cpu_s()` reads redis-server's CPU time.
"""

from __future__ import annotations

import json
import random
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

import redis
from scrapy import Request, Spider

from extensions.admission.admit import Admission, seen_key
from extensions.admission.patterns import family_of, number_of, pattern_strings, split_canonical
from extensions.admission.prioritizer import Prioritizer
from extensions.admission.records import AdmitItem, encode_request
from extensions.frontier.core import DownloadEvent, Frontier, FrontierConfig
from extensions.state.keys import FIXED_KEYS, FrontierKeys
from extensions.state.lua import FRONTIER, assemble

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


def done_and_ack(leases: Sequence[tuple[str, Any]]) -> list[DownloadEvent]:
    """The report of leases fetched (200) and finished now: done + ack for each."""
    now = time.time()
    events = []
    for lease_id, _ in leases:
        events += [DownloadEvent("done", lease_id, now, 200), DownloadEvent("ack", lease_id, now)]
    return events


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
        events = done_and_ack(reply.leases)
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


# ---- streamed workloads for bench_scale.py (millions of URLs, no Request per URL) ----

HELD_OUT_BASE = 10**10  # URL numbers of the held-out set: never admitted by any size


def iter_urls(n_ips: int, start: int, stop: int) -> Iterator[tuple[str, str, str]]:
    """(url, host, ip) for URL numbers start..stop-1, as make_urls' shape (~75 chars,
    URL k on IP k % n_ips) but computed from k alone, so a run can continue or probe
    any range without holding a list."""
    n_words = len(WORDS)
    for k in range(start, stop):
        i = k % n_ips
        mix = (k * 2654435761) & 0xFFFFFFFF  # Knuth's multiplicative hash: cheap, spread
        slug = "-".join(WORDS[(mix >> (4 * j)) % n_words] for j in range(1 + (mix >> 30) % 3))
        host = f"www.{WORDS[i % n_words]}{i}.example.com"
        ip = f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"
        section = SECTIONS[(mix >> 12) % len(SECTIONS)]
        path = f"/{section}/{2020 + k % 6}/{k % 12 + 1:02d}/{slug}-{k}.html"
        yield f"https://{host}{path}", host, ip


class LinkItems:
    """AdmitItems for plain outlinks (depth 1-6, no parent) as Admission.item builds
    them: the real encode_request, prioritizer and pattern functions, with one template
    Request per depth instead of a Request per URL (encode_request's `url=`).
    `admission_items()` builds the same items through Admission.item, to compare."""

    DEPTHS = 6

    def __init__(self, prioritizer: Prioritizer) -> None:
        self.prioritizer = prioritizer
        self.spider = _Spider()
        self.requests = [
            Request("https://template.invalid/", meta={"depth": 1 + d}) for d in range(self.DEPTHS)
        ]

    def item(self, k: int, url: str, host: str, ip: str) -> AdmitItem:
        request = self.requests[k % self.DEPTHS]
        parts = split_canonical(url)
        score = min(100.0, max(0.0, self.prioritizer.score(request, parts)))
        fine, coarse, host_wide, path_key = pattern_strings(parts)
        facet = path_key if self.prioritizer.faceted(parts) else ""
        return AdmitItem(
            seen_key=seen_key(url),
            ip=ip,
            host=host,
            priority=-1,  # the bucket of the score, as for any link without frontier_priority
            record=encode_request(request, self.spider, url=url, score=score),
            patterns=(fine, coarse, host_wide, path_key, facet),
            score=score,
            family=family_of(fine),
            number=number_of(parts),
        )

    def items(self, n_ips: int, start: int, stop: int) -> Iterator[AdmitItem]:
        for k, (url, host, ip) in enumerate(iter_urls(n_ips, start, stop), start=start):
            yield self.item(k, url, host, ip)

    @classmethod
    def admission_items(cls, admission: Admission, start: int, stop: int, n_ips: int) -> list[Any]:
        """Admission.item(...).lua() for the same URL numbers (Requests built as a
        spider's links are); `admission` must resolve the hosts to their IPs."""
        spider = _Spider()
        out = []
        for k, (url, _, _) in enumerate(iter_urls(n_ips, start, stop), start=start):
            request = Request(url, meta={"depth": 1 + k % cls.DEPTHS})
            out.append(admission.item(request, spider).lua())
        return out


def bloom_probe(client: redis.Redis, keys: FrontierKeys, config: FrontierConfig) -> Any:
    """A function (seen keys) -> how many bloom.lua's seen_before reports as seen: the
    admit script's Bloom lookup alone, so probing inserts nothing (as test_bloom.py)."""
    fields = ", ".join(f"{key} = KEYS[{i}]" for i, key in enumerate(FIXED_KEYS, start=1))
    body = (
        "local n = 0\nfor _, key in ipairs(A.keys) do\n"
        "  if seen_before(key) then n = n + 1 end\nend\nreturn n"
    )
    script = client.register_script(
        "local K = {" + fields + "}\n" + assemble(FRONTIER, "bloom") + "\n" + body
    )

    def probe(batch: list[str]) -> int:
        payload = {"now": 0, "cfg": config.lua(), "families": keys.families(), "keys": batch}
        return int(script(keys=keys.fixed(), args=[json.dumps(payload)]))

    return probe


def redis_cpu_s(client: redis.Redis) -> float:
    """redis-server's own CPU seconds so far (INFO cpu: user + sys, main and children)."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


# INFO persistence fields set while a child process (AOF rewrite, RDB save) runs: the
# parent pays copy-on-write faults for every page it writes meanwhile.
FORK_FIELDS = ("aof_rewrite_in_progress", "rdb_bgsave_in_progress")


def forking(client: redis.Redis) -> bool:
    """True while an AOF rewrite or an RDB save runs in a forked child."""
    persistence = client.info("persistence")
    return any(int(persistence.get(f, 0)) for f in FORK_FIELDS)


def wait_for_forks(client: redis.Redis, limit_s: float = 600.0) -> float:
    """Seconds waited for a running fork to end (at most `limit_s`)."""
    start = time.monotonic()
    while forking(client) and time.monotonic() - start < limit_s:
        time.sleep(0.5)
    return time.monotonic() - start
