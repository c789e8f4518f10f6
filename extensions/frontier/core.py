"""The frontier's Redis side: admit, lease, report, route parked hosts.

Each operation is one Lua script (atomic across every worker on the Redis).
Time comes from an injectable clock, so unit tests drive the very same scripts
with a virtual clock and measure throughput in virtual seconds.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from extensions.admission.bloom import BloomConfig
from extensions.admission.budgets import TrapConfig
from extensions.admission.records import AdmitItem
from extensions.state.connection import TRANSIENT_ERRORS, AnyAsyncRedis, as_str
from extensions.state.keys import FrontierKeys
from extensions.state.lua import ENTRY_SCRIPTS, read_lua, script_source

logger = logging.getLogger(__name__)

# Items per admit script call, for the scheduler's batches and the operator verbs alike
# (scrapy seed): ~0.1 s of Redis at ~100 us per URL, under the client's timeout and the
# busy-script limit (a sitemap's or seeds file's 50,000 URLs in one call held Redis
# for seconds).
ADMIT_CHUNK = 1000
# Lost calls remembered at most (a Redis down for long: the oldest calls' leases expire).
MAX_LOST_CALLS = 1000


@dataclass(frozen=True)
class FrontierConfig:
    """Politeness and capacity knobs, read and checked by frontier_config (FRONTIER_* in
    crawlproj/settings.py, the only place their defaults are written)."""

    delay: float  # seconds from the end of one fetch to the next start, per IP
    back_queues: int  # IPs that hold a back queue at once
    ip_concurrency: int  # requests in flight per IP
    weights: tuple[int, ...]  # front queue weights, priority 0 first
    lanes: int  # lanes of an IP's back queue (score buckets, the best first)
    lease_ttl: float  # a lease not acked within this is re-delivered
    backoff_base: float  # first 429/503 backoff without Retry-After, doubled per repeat
    failure_backoff_base: float  # first backoff after a timeout, reset or 5xx, doubled too
    backoff_max: float  # cap on any backoff, Retry-After included
    quarantine_after: int  # consecutive failures that quarantine an IP
    quarantine_s: float  # how long a quarantined IP waits the first time
    quarantine_max_s: float  # cap on a quarantine doubled per repeat without a success
    down_after_s: float  # failing this long, a quarantine included, the IP is down (0 = never)
    adaptive_factor: float  # delay >= factor x moving average of response times (0 = off)
    rate_step: float  # AIMD: share of full speed each success gives back after a 429/503
    max_pages_per_host: int  # URLs admitted per host per crawl (0 = no budget)
    max_per_pattern: int  # URLs admitted per URL pattern (0 = no cap)
    recrawl_share: float  # fetches of an IP given to re-crawls when both kinds wait
    traps: TrapConfig  # budgets and trap feedback in the admit/report scripts (PRIORITY_*)
    refill_batch: int = 1000  # front-queue entries routed per script call at most (no setting)
    seen: BloomConfig = field(default_factory=BloomConfig)  # URL-seen in admit.lua (SEEN_*)

    @property
    def priorities(self) -> int:
        return len(self.weights)

    def lua(self) -> dict[str, Any]:
        return {**self._lua_fields, "seed": random.getrandbits(31)}

    def lua_json(self) -> str:
        """json.dumps(self.lua()), the constant part encoded once per config."""
        return f"{self._lua_json_head}{random.getrandbits(31)}}}"

    @functools.cached_property
    def _lua_json_head(self) -> str:
        # Every script call sends the config (~1 KB of JSON): encoding it each time was
        # ~30-40 of the 300-430 us of client CPU an empty lease cost (loaded machine).
        return json.dumps(self._lua_fields)[:-1] + ', "seed": '

    @functools.cached_property
    def _lua_fields(self) -> dict[str, Any]:
        # Once per config: asdict copies the whole tree, 82 of the ~107 us a script call
        # cost on the client (bench/README.md, "CPU per page"). Read-only (json.dumps).
        cfg = asdict(self)
        cfg["weights"] = list(self.weights)
        return cfg


@dataclass
class FrontierReply:
    """Counters every script returns, plus what the script itself produced."""

    queued: int = 0
    leased: int = 0
    pending_hosts: int = 0
    recrawl_queued: int = 0  # re-crawl records among queued (the feeder's back-pressure)
    next_due: float | None = None
    next_expiry: float | None = None
    heap_known: bool = False  # next_due is the ready heap's top, None when it is empty
    leases: list[tuple[str, str]] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    call: str = ""  # a lease call's token, on its lease ids (Frontier.lease)

    @property
    def remaining(self) -> int:
        """Work left anywhere in the crawl: queued, leased or parked on DNS."""
        return self.queued + self.leased + self.pending_hosts

    @classmethod
    def parse(cls, raw: bytes | str) -> FrontierReply:
        data = json.loads(raw)
        # cjson encodes an empty Lua table as {}: normalise to lists.
        leases = data.pop("leases", None) or []
        hosts = data.pop("hosts", None) or []
        reply = cls(
            queued=int(data.pop("queued", 0)),
            leased=int(data.pop("leased", 0)),
            pending_hosts=int(data.pop("pending_hosts", 0)),
            recrawl_queued=int(data.pop("recrawl_queued", 0)),
            next_due=_float_or_none(data.pop("next_due", None)),
            next_expiry=_float_or_none(data.pop("next_expiry", None)),
            heap_known=bool(data.pop("heap", False)),
            leases=[(str(i), str(r)) for i, r in leases],
            hosts=[str(h) for h in hosts],
        )
        reply.extra = data
        return reply


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class DownloadEvent:
    """A fetch ended ('done') or a leased request was fully processed ('ack')."""

    kind: str
    lease_id: str
    at: float
    status: int = 0
    retry_after: float | None = None
    timeout: bool = False
    latency: float | None = None
    block_until: float | None = None  # 'release': keep the IP blocked until then
    host: str | None = None  # 'done': counted per host for operators; 'ack': its page's
    outcome: str | None = None  # 'ack': new, duplicate, soft_404, not_found (trap feedback)
    patterns: tuple[str, ...] = ()  # 'ack': the page's URL patterns (admission/patterns.py)
    number: int = -1  # 'ack': its counter in its pattern (patterns.number_of), -1 for none
    failed: bool = False  # 'done': connection refused, reset or lost (counts against the IP)

    def lua(self) -> dict[str, Any]:
        event: dict[str, Any] = {"t": self.kind, "id": self.lease_id, "at": self.at}
        if self.status:
            event["status"] = self.status
        if self.retry_after is not None:
            event["retry_after"] = self.retry_after
        if self.timeout:
            event["timeout"] = True
        if self.failed:
            event["fail"] = True
        if self.latency is not None:
            event["latency"] = self.latency
        if self.block_until is not None:
            event["block_until"] = self.block_until
        if self.host is not None:
            event["host"] = self.host
        if self.outcome is not None and self.patterns:
            event["o"], event["pt"] = self.outcome, list(self.patterns)
            if self.number >= 0:
                event["n"] = self.number
        return event


class IpLease(NamedTuple):
    """lease_ip's answer: the lease id ("" when refused) and when its fetch may start,
    or when to ask again."""

    lease_id: str
    at: float


class Frontier:
    """Async client of the frontier scripts for one crawl."""

    def __init__(
        self,
        redis: AnyAsyncRedis,
        keys: FrontierKeys,
        config: FrontierConfig,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.redis = redis
        self.keys = keys
        self.config = config
        self.clock = clock
        self._scripts = {name: redis.register_script(script_source(name)) for name in ENTRY_SCRIPTS}
        self._crawl_delay = redis.register_script(read_lua("extensions.frontier", "crawl_delay"))
        # Lease calls: this client's token and count, and the calls whose reply was lost.
        self._worker, self._calls = os.urandom(4).hex(), 0
        self._lost: dict[str, bool] = {}  # call -> given back once already
        # Constant per frontier (FrontierKeys is frozen): built once, not per script call.
        self._fixed_keys = keys.fixed()
        self._families_json = json.dumps(keys.families())

    async def _run(self, name: str, **args: Any) -> FrontierReply:
        raw = await self._scripts[name](keys=self._fixed_keys, args=[self.payload(args)])
        return FrontierReply.parse(raw)

    def payload(self, args: dict[str, Any]) -> str:
        """The script's one argument: the JSON of {"now", "cfg", "families", **args},
        its constant parts encoded once (a lease or report is ~1.1 KB of it)."""
        head = (
            f'{{"now": {json.dumps(self.clock())}, "cfg": {self.config.lua_json()}, '
            f'"families": {self._families_json}'
        )
        return f"{head}, {json.dumps(args)[1:]}" if args else head + "}"

    async def admit(self, items: Sequence[AdmitItem]) -> FrontierReply:
        return await self._run("admit", items=[item.lua() for item in items])

    async def lease(self, n: int) -> FrontierReply:
        """Lease up to n requests; n = 0 only reclaims and reports the counters."""
        return await self._lease_call("lease", n=max(0, n))

    async def _lease_call(self, name: str, **args: Any) -> FrontierReply:
        """A leasing script's call, with its token (its lease ids end in it). The leases
        of earlier calls whose reply was lost are given back first."""
        await self.give_back_lost()
        self._calls += 1
        call = f"{self._worker}.{self._calls}"
        try:
            reply = await self._run(name, call=call, **args)
        except TRANSIENT_ERRORS:  # the call may have run (a stalled Redis runs it on resuming)
            self.lost(call)
            raise
        reply.call = call
        return reply

    def lost(self, call: str) -> None:
        """A lease call whose leases no one will dispatch: its reply timed out (Redis may
        run the script when it resumes), or was dropped (sharded.py)."""
        if len(self._lost) >= MAX_LOST_CALLS:
            self._lost.pop(next(iter(self._lost)))  # the oldest: its leases expire
        self._lost[call] = False

    async def give_back_lost(self) -> None:
        """Give back the leases of lost calls (cancel_lease.lua), twice per call: a call
        still buffered in a stalled Redis runs as soon as it resumes, so it has run by the
        time an answer to the first give-back (Redis is back) has come and the second
        goes. Redis errors propagate: the lease waits for Redis as well."""
        for call, once in list(self._lost.items()):
            reply = await self._run("cancel_lease", call=call)
            given = int(reply.extra.get("given_back", 0))
            if given:
                logger.info("Gave back %d leases of a lease call whose reply was lost", given)
            if once:
                del self._lost[call]
            else:
                self._lost[call] = True

    async def lease_ip(self, ip: str, latest: float) -> IpLease:
        """Lease `ip` for one request outside its queues (lua/lease_ip.lua), from when it
        is due if that is no later than `latest` and it is below its in-flight cap;
        else when to ask again."""
        reply = await self._lease_call("lease_ip", ip=ip, latest=latest)
        if "lease" in reply.extra:
            return IpLease(str(reply.extra["lease"]), float(reply.extra["start_at"]))
        return IpLease("", float(reply.extra["retry_at"]))

    async def report(self, events: Sequence[DownloadEvent]) -> FrontierReply:
        return await self._run("report", events=[event.lua() for event in events])

    async def route_pending(
        self, host: str, ip: str = "", retry_at: float | None = None, drop: bool = False
    ) -> FrontierReply:
        return await self._run("route_pending", host=host, ip=ip, retry_at=retry_at, drop=drop)

    async def unpark(self, host: str, count: int, digest: str) -> FrontierReply:
        """Drop the first `count` parked requests of `host` if their digest still
        matches (sharded routing, see sharded.py)."""
        return await self._run("unpark", host=host, count=count, digest=digest)

    async def set_crawl_delay(
        self, ip: str, host: str, seconds: float | None, expires_at: float
    ) -> None:
        """`host`'s robots.txt Crawl-delay (None: it has none) until `expires_at`; the
        IP's crawl_delay becomes the max over its hosts still current (crawl_delay.lua)."""
        value = "" if seconds is None else repr(float(seconds))
        args = [host, value, repr(expires_at), repr(self.clock())]
        await self._crawl_delay(keys=[self.keys.ip_state(ip)], args=args)

    async def stats(self) -> dict[str, int]:
        raw = await self.redis.hgetall(self.keys.key("stats"))
        return {as_str(k): int(v) for k, v in raw.items()}
