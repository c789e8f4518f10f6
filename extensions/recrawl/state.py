"""Re-crawl state in Redis: per stored URL, what we hold and when to fetch it again.

Per URL (key doc:<fp>, one JSON string; fp = the URL-seen fingerprint of its canonical
URL): the last fetch time, its validators (ETag, Last-Modified) for the next
conditional GET, the content hash and simhash of the stored copy and its content_ref,
the last RECRAWL_HISTORY visits (interval, changed?, age of the change from
Last-Modified) and the change rate estimated from them (recrawl_policy.estimate_rate),
and its bucket in the crawl's rate histogram. A due set (zset fp -> next due time) is
what the feeder claims from: claiming moves a URL's due time to the claim's expiry (a
lease), so a worker that dies mid re-fetch loses nothing.

Writes of one observation go through one Lua script (state + histogram + due set +
claim), so every worker sees them whole. A sharded crawl keeps each page's state, due
time and claim in the page's shard (recrawl/layout.py): a claim or a histogram read
visits every shard.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import signals

from extensions.admission.priorities import FRONT_QUEUES, front_queue, priority_weights
from extensions.config import (
    Setting,
    Table,
    above,
    at_least,
    below,
    between,
    one_of,
    read,
)
from extensions.fetch.http_dates import http_time
from extensions.recrawl.layout import PageLayout
from extensions.recrawl.policy import POLICIES, estimate_rate
from extensions.recrawl.schedule import (
    NEW_BUCKET,
    RecrawlSchedule,
    ScheduleConfig,
    rate_bucket,
)
from extensions.state.connection import AnyAsyncRedis, as_str, redis_lifecycle
from extensions.state.keys import FrontierKeys, PageKeys
from extensions.state.lua import read_lua

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings


def lua(name: str) -> str:
    """A script of extensions/recrawl/lua/."""
    return read_lua("extensions.recrawl", name)


@dataclass(frozen=True)
class RecrawlConfig:
    """RECRAWL_* settings (RECRAWL below reads and checks them). The defaults, for code
    that builds one directly, equal crawlproj/settings.py (tests/unit/test_config.py)."""

    enabled: bool = True
    continuous: bool = False
    priority: int = 1
    batch: int = 200
    max_queued: int = 2000
    claim_ttl: float = 3600.0
    history: int = 16
    min_history: int = 4  # observed intervals before the estimate steers the schedule
    tick: float = 1.0
    schedule_refresh: float = 30.0
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)

    @classmethod
    def from_settings(cls, settings: BaseSettings, priorities: int) -> RecrawlConfig:
        """`priorities`: the frontier's front queues, which RECRAWL_PRIORITY names one of;
        ValueError names the bad setting."""
        schedule = read(SCHEDULE, settings)
        return read(RECRAWL, settings, {FRONT_QUEUES: priorities}, schedule=schedule)


# Read alone by the components that switch themselves off with it.
ENABLED = Setting("RECRAWL_ENABLED", "enabled", bool)
RECRAWL = Table(
    RecrawlConfig,
    ENABLED,
    Setting("RECRAWL_CONTINUOUS", "continuous", bool),
    Setting("RECRAWL_PRIORITY", "priority", int, front_queue),
    Setting("RECRAWL_BATCH", "batch", int, at_least(1)),
    Setting("RECRAWL_MAX_QUEUED", "max_queued", int, at_least(1)),
    Setting("RECRAWL_CLAIM_TTL", "claim_ttl", float, above(0)),
    Setting("RECRAWL_HISTORY", "history", int, at_least(1)),
    Setting("RECRAWL_MIN_HISTORY", "min_history", int, between(1, "RECRAWL_HISTORY")),
    Setting("RECRAWL_TICK", "tick", float, above(0)),
    Setting("RECRAWL_SCHEDULE_REFRESH", "schedule_refresh", float, above(0)),
)
SCHEDULE = Table(
    ScheduleConfig,
    Setting("RECRAWL_POLICY", "policy", str, one_of(*POLICIES)),
    Setting("RECRAWL_MIN_INTERVAL", "min_interval", float, above(0)),
    Setting("RECRAWL_INTERVAL", "interval", float, at_least("RECRAWL_MIN_INTERVAL")),
    Setting("RECRAWL_MAX_INTERVAL", "max_interval", float, at_least("RECRAWL_INTERVAL")),
    Setting("RECRAWL_CAP_FRESHNESS", "cap_freshness", float, at_least(0), below(1)),
)


@dataclass(frozen=True)
class DocState:
    """What the crawl holds for one stored URL (decoded doc:<fp> hash)."""

    fp: str
    url: str
    at: float
    etag: str = ""
    last_modified: str = ""
    content_hash: str = ""
    text_hash: str = ""  # sha256 of the stored copy's main text ("" before 2026-12)
    simhash: str = ""
    content_ref: str = ""
    duplicate_of: str = ""
    visits: int = 0
    # (seconds since the previous visit, changed?, age of the change or -1 if unknown)
    obs: tuple[tuple[float, bool, float], ...] = ()
    rate: float = 0.0

    doc: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    legacy: bool = field(default=False, compare=False)  # read from the pre-shard place

    @classmethod
    def from_redis(cls, fp: str, raw: bytes | str | None, legacy: bool = False) -> DocState | None:
        """The URL's state from its doc:<fp> JSON string (None: never stored)."""
        if not raw:
            return None
        doc = json.loads(raw)
        obs = tuple(
            (float(o[0]), bool(o[1]), float(o[2]) if len(o) > 2 else -1.0)
            for o in doc.get("obs", ())
        )
        return cls(
            fp=fp,
            url=doc.get("u", ""),
            at=float(doc.get("at", 0)),
            etag=doc.get("etag", ""),
            last_modified=doc.get("lm", ""),
            content_hash=doc.get("ch", ""),
            text_hash=doc.get("th", ""),
            simhash=doc.get("sh", ""),
            content_ref=doc.get("ref", ""),
            duplicate_of=doc.get("dup", ""),
            visits=int(doc.get("visits", 0)),
            obs=obs,
            rate=float(doc.get("rate", 0)),
            doc=doc,
            legacy=legacy,
        )


@dataclass(frozen=True)
class Fetch:
    """One fetch of a URL as the pipelines saw it."""

    fp: str
    url: str
    at: float
    changed: bool | None  # None: first fetch, nothing to compare with
    fields: dict[str, Any]  # doc fields to set ('' deletes): validators, hashes, ref, cb, d
    last_modified: str = ""  # the response's Last-Modified (a hint for a first fetch)


@dataclass(frozen=True)
class Claim:
    due_left: int  # URLs due now and still unclaimed (more than one claim could take)
    next_due: float | None  # the earliest due time after now, None if nothing is stored
    rows: list[list[str]]  # [fp, url, etag, last_modified, callback, depth] per claimed URL


def change_age(fetch: Fetch, prev: DocState) -> float:
    """Seconds between the page's last change and this fetch, from Last-Modified, or -1
    when unknown: no change seen, no date, or a date before our previous visit although
    the body changed (the server's date does not follow its content)."""
    modified = http_time(fetch.last_modified) if fetch.changed and fetch.last_modified else None
    if modified is None or modified < prev.at - 1 or modified > fetch.at:
        return -1.0
    # HTTP dates are whole seconds, truncated: the change was within the second after
    # the date, so take its middle.
    return round(max(0.05, fetch.at - modified - 0.5), 3)


class RecrawlStore:
    """The crawl's re-crawl state (async: used on the reactor's asyncio loop)."""

    def __init__(self, redis: AnyAsyncRedis, keys: FrontierKeys, config: RecrawlConfig) -> None:
        self.redis = redis
        self.layout = PageLayout(redis, keys)
        self.config = config
        self.schedule = RecrawlSchedule(config.schedule)
        self._schedule_at = 0.0
        self._first = 0  # the place a claim starts at: rotates, so none waits behind
        self._claim = redis.register_script(lua("claim"))
        self._commit = redis.register_script(lua("commit"))
        self._hint = redis.register_script(lua("hint"))

    async def close(self) -> None:
        await self.redis.aclose()

    async def load(self, fp: str) -> DocState | None:
        raw = await self.redis.get((await self.layout.shard_of(fp)).doc(fp))
        legacy = self.layout.legacy
        if raw is None and legacy is not None:
            return DocState.from_redis(fp, await self.redis.get(legacy.doc(fp)), legacy=True)
        return DocState.from_redis(fp, raw)

    async def claim(self, n: int, now: float) -> Claim:
        """Claim up to n due URLs (a lease of RECRAWL_CLAIM_TTL) from every place."""
        places = await self.layout.places()
        self._first = (self._first + 1) % len(places)
        rows: list[list[str]] = []
        due_left, dues = 0, []
        for place in places[self._first :] + places[: self._first]:
            part = await self._claim_in(place, n - len(rows), now)
            if place is self.layout.legacy and part.next_due is None and not part.due_left:
                self.layout.legacy = None  # drained: every page moved (or was forgotten)
            rows += part.rows
            due_left += part.due_left
            dues += [part.next_due] if part.next_due is not None else []
        return Claim(due_left, min(dues, default=None), rows)

    async def _claim_in(self, place: PageKeys, n: int, now: float) -> Claim:
        claim_until = now + self.config.claim_ttl
        raw = await self._claim(
            keys=[place.recrawl_due, place.recrawl_claims],
            args=[now, n, claim_until, place.doc("")],
        )
        rows = [[v.decode() if isinstance(v, bytes) else str(v) for v in row] for row in raw[2:]]
        next_due = float(raw[1]) if raw[1] else None
        return Claim(due_left=int(raw[0]), next_due=next_due, rows=rows)

    async def due_now(self, now: float) -> int:
        places = await self.layout.places()
        return sum([int(await self.redis.zcount(p.recrawl_due, "-inf", now)) for p in places])

    async def postpone(self, fp: str, until: float) -> None:
        """A claimed URL the frontier would not take (blocked, robots): due again later
        (XX: only where it is due, its shard or the legacy place)."""
        await self.redis.zadd((await self.layout.shard_of(fp)).recrawl_due, {fp: until}, xx=True)
        if self.layout.legacy is not None:
            await self.redis.zadd(self.layout.legacy.recrawl_due, {fp: until}, xx=True)

    async def hint_lastmod(self, pairs: list[tuple[str, float]], now: float) -> int:
        """Sitemap <lastmod> later than the stored copy: the URL is due now."""
        groups: dict[PageKeys, list[Any]] = {}
        for fp, lastmod in pairs:
            groups.setdefault(await self.layout.shard_of(fp), []).extend([fp, lastmod])
            if self.layout.legacy is not None:  # hint.lua skips fps not stored there
                groups.setdefault(self.layout.legacy, []).extend([fp, lastmod])
        moved = 0
        for place, args in groups.items():
            reply = await self._hint(keys=[place.recrawl_due], args=[now, place.doc(""), *args])
            moved += int(reply)
        return moved

    async def refresh_schedule(self, now: float) -> None:
        if now < self._schedule_at:
            return
        self._schedule_at = now + self.config.schedule_refresh
        counts: dict[str, int] = {}
        for place in await self.layout.places():
            for bucket, n in (await self.redis.hgetall(place.recrawl_rates)).items():
                counts[as_str(bucket)] = counts.get(as_str(bucket), 0) + int(n)
        self.schedule.update(counts)

    async def record(self, fetch: Fetch, prev: DocState | None) -> float:
        """Store one fetch: history, change-rate estimate, next due time. Returns the
        URL's estimated change rate (changes per second)."""
        await self.refresh_schedule(fetch.at)
        obs = list(prev.obs) if prev is not None else []
        if prev is not None and fetch.changed is not None and fetch.at > prev.at:
            visit = (round(fetch.at - prev.at, 3), fetch.changed, change_age(fetch, prev))
            obs = [*obs, visit][-self.config.history :]
        visits = (prev.visits if prev is not None else 0) + 1
        rate = (
            estimate_rate(
                [t for t, _, _ in obs],
                [c for _, c, _ in obs],
                [a if a >= 0 else None for _, _, a in obs],
            )
            if obs
            else 0.0
        )
        # A few visits give a noisy estimate; one that steered the schedule could cap
        # a page as a fast mover (RECRAWL_MAX_INTERVAL) on a fluke.
        known = len(obs) >= self.config.min_history
        bucket = self._bucket(rate, sum(1 for _, c, _ in obs if c)) if known else NEW_BUCKET
        interval = self.schedule.interval(bucket)
        if not known:
            interval = self._first_interval(fetch, interval)
        doc = dict(prev.doc) if prev is not None else {}
        for name, value in fetch.fields.items():
            if value == "":
                doc.pop(name, None)  # e.g. a validator the server no longer sends
            else:
                doc[name] = value
        doc.update(
            u=fetch.url,
            at=fetch.at,
            visits=visits,
            rate=float(f"{rate:.6g}"),
            obs=[[t, int(c)] if a < 0 else [t, int(c), a] for t, c, a in obs],
            bucket=bucket,
        )
        await self._write(fetch.fp, fetch.at, doc=doc, due=fetch.at + interval)
        if prev is not None and prev.legacy and self.layout.legacy is not None:
            await self._write(fetch.fp, fetch.at, doc=None, place=self.layout.legacy)  # moved
        return rate

    async def _write(
        self,
        fp: str,
        at: float,
        doc: dict[str, Any] | None,
        due: float = 0,
        place: PageKeys | None = None,
    ) -> None:
        """One commit.lua call in `place` (default: the URL's shard): the new state
        (None: forget the URL)."""
        place = place or await self.layout.shard_of(fp)
        payload: dict[str, Any] = {"fp": fp, "at": at}
        if doc is None:
            payload["gone"] = True
        else:
            payload.update(
                doc=json.dumps(doc, separators=(",", ":")), bucket=doc["bucket"], due=due
            )
        keys = [place.recrawl_due, place.recrawl_rates, place.recrawl_claims, place.doc(fp)]
        await self._commit(keys=keys, args=[json.dumps(payload)])

    def _bucket(self, rate: float, changes: int) -> str:
        """The URL's histogram bucket. Giving up on a page (RECRAWL_MAX_INTERVAL: a fast
        mover under the cap, or a page the optimum does not fetch) is the costly mistake,
        so it is decided on a cautious estimate, one standard error (rate / sqrt(changes))
        lower: a page just past the threshold on a high estimate keeps being visited."""
        bucket = rate_bucket(rate)
        if changes == 0 or self.schedule.interval(bucket) < self.config.schedule.max_interval:
            return bucket
        cautious = rate_bucket(rate * max(0.0, 1 - changes**-0.5))
        return (
            cautious
            if self.schedule.interval(cautious) < self.schedule.interval(bucket)
            else bucket
        )

    def _first_interval(self, fetch: Fetch, interval: float) -> float:
        """Last-Modified hint for a URL without enough history: a page modified an hour ago
        is looked at again within the hour, one untouched for a year waits the interval."""
        modified = http_time(fetch.last_modified) if fetch.last_modified else None
        if modified is None or modified > fetch.at:
            return interval
        return min(interval, max(self.config.schedule.min_interval, fetch.at - modified))

    async def forget(self, fp: str, at: float) -> None:
        """The URL is gone (404/410 on a re-fetch): no more re-crawls, state dropped."""
        await self._write(fp, at, doc=None)
        if self.layout.legacy is not None:
            await self._write(fp, at, doc=None, place=self.layout.legacy)


_stores: weakref.WeakKeyDictionary[Any, RecrawlStore | None] = weakref.WeakKeyDictionary()


def recrawl_store(crawler: Crawler) -> RecrawlStore | None:
    """The crawl's RecrawlStore (None when RECRAWL_ENABLED is off), created on first
    use; the pipelines, the scheduler's feeder and the spider share it."""
    if crawler in _stores:
        return _stores[crawler]
    settings = crawler.settings
    store = None
    config = RecrawlConfig.from_settings(settings, len(priority_weights(settings)))
    if config.enabled:
        assert crawler.spider is not None
        crawl = settings.get("FRONTIER_CRAWL_NAME") or crawler.spider.name
        client = redis_lifecycle(crawler).async_client()
        store = RecrawlStore(client, FrontierKeys(crawl), config)
        crawler.signals.connect(store.close, signal=signals.spider_closed)
    _stores[crawler] = store
    return store
