"""The crawl-wide gauges a scaled crawl needs, read from Redis: one reader for the
Prometheus endpoint (metrics.py) and `scrapy status`.

Why a reader of its own: a scaled crawl has many workers, and a worker's Scrapy stats
say what that worker saw, not what the crawl holds. Everything here is read from the
crawl's keys, in a number of Redis calls bounded by shards x priorities plus a few,
never by the number of IPs or stored pages (a Prometheus scrape must stay cheap at
100,000 IPs):
- queue depth: each front queue's LLEN, and each back-queue lane's record count, which
  the Lua scripts keep exact in P:stats (lane_<L>, frontier/lua/back_queues.lua). A
  shard whose counters started after its queues did (a crawl queued before them) has
  no lanes_counted mark: its lanes are unknown until its back queues drain.
- URL-seen: each shard's Bloom generations (admission/bloom.py), their fill and
  estimated false-positive rate.
- admission rejections by reason: the admit script's own (P:stats, exact) plus the ones
  workers decide before it (blocklist, filters, robots...), which every worker adds to
  the crawl-wide G:worker_stats (shared_stats.py); robots.txt fetch failures by cause
  come from there too, with the origins whose robots.txt is failing now.
- re-crawl backlog: URLs due now (ZCOUNT), and those overdue by more than their own
  interval, from a sample (overdue()).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from extensions.admission.bloom import generations
from extensions.recrawl.state import DocState
from extensions.state.connection import as_str

if TYPE_CHECKING:
    from extensions.state.connection import AnyAsyncRedis
    from extensions.state.keys import FrontierKeys, PageKeys, ShardedKeys

# Refusal verdicts the admit script counts in P:stats under their own names (traps.lua).
SCRIPT_REASONS = ("pattern_closed", "past_the_end", "pattern_cap", "facet_cap", "host_budget")
# Worker stats shared crawl-wide in G:worker_stats (shared_stats.py), by prefix.
REJECTED_PREFIX = "frontier/rejected/"
ROBOTS_FAILED_PREFIX = "robots/failed/"
# Due URLs whose docs are read to estimate the overdue ones (one pipelined round trip).
OVERDUE_SAMPLE = 200


@dataclass(frozen=True)
class BloomGauge:
    """One Bloom generation of one frontier shard."""

    shard: int
    generation: int
    capacity: int
    inserted: int
    fill: float  # inserted / capacity
    fp_rate: float  # estimated, (1 - exp(-k n / m))^k


@dataclass(frozen=True)
class Overdue:
    """Due URLs whose last visit is more than one interval before their due time."""

    count: int  # every due URL looked at, or the sample's share scaled to due_now
    exact: bool
    sampled: int  # due URLs whose docs were read


@dataclass(frozen=True)
class CrawlGauges:
    counters: dict[str, int]  # every shard's P:stats, summed
    front_queues: tuple[int, ...]  # URLs per front queue, priority 0 first
    back_lanes: tuple[int, ...] | None  # records per back-queue lane; None: unknown
    bloom: tuple[BloomGauge, ...]
    recrawl_due_now: int
    recrawl_overdue: Overdue
    robots_failing_origins: int  # origins whose last robots.txt fetches failed
    rejected: dict[str, int] = field(default_factory=dict)  # reason -> URLs
    robots_failures: dict[str, int] = field(default_factory=dict)  # cause -> fetches


async def read_gauges(
    redis: AnyAsyncRedis, keys: ShardedKeys, priorities: int, lanes: int, now: float
) -> CrawlGauges:
    """`priorities`, `lanes`: the crawl's front queues and back-queue lanes."""
    counters: dict[str, int] = {}
    front = [0] * priorities
    back: list[int] | None = [0] * lanes
    bloom: list[BloomGauge] = []
    for index, shard in enumerate(keys.all()):
        stats = {as_str(k): int(v) for k, v in (await redis.hgetall(shard.key("stats"))).items()}
        for name, value in stats.items():
            counters[name] = counters.get(name, 0) + value
        for p in range(priorities):
            front[p] += int(await redis.llen(shard.front_queue(p)))
        back = _add_lanes(back, stats)
        bloom += await _bloom(redis, shard, index)
    crawl = keys.crawl_keys
    shared = {as_str(k): int(v) for k, v in (await redis.hgetall(crawl.worker_stats)).items()}
    # A sharded crawl from before page shards may still hold state in the old place.
    places = crawl.pages() if crawl.page_shards == 1 else [*crawl.pages(), crawl.legacy_pages]
    due_now, late = await recrawl_backlog(redis, places, now)
    return CrawlGauges(
        counters=counters,
        front_queues=tuple(front),
        back_lanes=None if back is None else tuple(back),
        bloom=tuple(bloom),
        recrawl_due_now=due_now,
        recrawl_overdue=late,
        robots_failing_origins=int(await redis.hlen(crawl.robots_errors)),
        rejected=rejections(counters, shared),
        robots_failures=_prefixed(shared, ROBOTS_FAILED_PREFIX),
    )


def _add_lanes(back: list[int] | None, stats: dict[str, int]) -> list[int] | None:
    """A shard's lane counters added in; None once any shard's are unknown. A shard
    with no counters at all has run no script: it queues nothing."""
    if back is None or (stats and "lanes_counted" not in stats):
        return None
    return [n + stats.get(f"lane_{lane}", 0) for lane, n in enumerate(back)]


async def _bloom(redis: AnyAsyncRedis, shard: FrontierKeys, index: int) -> list[BloomGauge]:
    return [
        BloomGauge(index, g.number, g.capacity, g.count, g.fill, g.fp_rate)
        for g in await generations(redis, shard)
    ]


def rejections(counters: dict[str, int], shared: dict[str, int]) -> dict[str, int]:
    """Reason -> URLs refused crawl-wide: the admit script's verdicts, then the workers'."""
    found = {reason: counters[reason] for reason in SCRIPT_REASONS if counters.get(reason)}
    for reason, count in _prefixed(shared, REJECTED_PREFIX).items():
        found[reason] = found.get(reason, 0) + count
    return found


def _prefixed(values: dict[str, int], prefix: str) -> dict[str, int]:
    return {k.removeprefix(prefix): v for k, v in sorted(values.items()) if k.startswith(prefix)}


async def recrawl_backlog(
    redis: AnyAsyncRedis, pages: list[PageKeys], now: float
) -> tuple[int, Overdue]:
    """URLs due now and the overdue ones, over every page shard."""
    due_now, count, exact, sampled = 0, 0, True, 0
    for shard in pages:
        due = int(await redis.zcount(shard.recrawl_due, "-inf", now))
        late = await overdue(redis, shard, due, now)
        due_now, count = due_now + due, count + late.count
        exact, sampled = exact and late.exact, sampled + late.sampled
    return due_now, Overdue(count, exact, sampled)


async def overdue(redis: AnyAsyncRedis, keys: PageKeys, due_now: int, now: float) -> Overdue:
    """Due URLs overdue by more than one interval: due at d after a visit at a (the doc's
    `at`), so its interval is d - a, and it is overdue by more when now - d > d - a.
    Exact when at most OVERDUE_SAMPLE URLs are due; otherwise a random sample of the
    stored URLs (ZRANDMEMBER) is read and its due share scaled to due_now: a second
    zset scored d + interval would make it exact, at a second zset entry per stored
    page, written by every re-crawl commit, for a number an operator reads as a trend."""
    if due_now == 0:
        return Overdue(0, True, 0)
    exact = due_now <= OVERDUE_SAMPLE
    due = await _due_entries(redis, keys, exact, now)
    if not due:
        return Overdue(0, False, 0)
    pipe = redis.pipeline(transaction=False)
    for fp, _ in due:
        pipe.get(keys.doc(fp))
    docs = await pipe.execute()
    late = 0
    for (fp, due_at), raw_doc in zip(due, docs, strict=True):
        doc = DocState.from_redis(fp, raw_doc)
        if doc is not None and now - due_at > due_at - doc.at:
            late += 1
    count = late if exact else round(due_now * late / len(due))
    return Overdue(count, exact, len(due))


async def _due_entries(
    redis: AnyAsyncRedis, keys: PageKeys, every: bool, now: float
) -> list[tuple[str, float]]:
    """(fp, due time) of every due URL, or of at most OVERDUE_SAMPLE random due ones."""
    if every:
        raw: list[Any] = await redis.zrangebyscore(keys.recrawl_due, "-inf", now, withscores=True)
    else:
        picked = await redis.zrandmember(keys.recrawl_due, 4 * OVERDUE_SAMPLE, withscores=True)
        raw = _pairs(cast("list[Any]", picked))
    due = [(as_str(fp), float(at)) for fp, at in raw if float(at) <= now]
    return due if every else random.sample(due, min(len(due), OVERDUE_SAMPLE))


def _pairs(raw: list[Any]) -> list[Any]:
    """ZRANDMEMBER WITHSCORES: pairs on RESP3, a flat member, score list on RESP2."""
    if raw and not isinstance(raw[0], list | tuple):
        return list(zip(raw[::2], raw[1::2], strict=True))
    return raw
