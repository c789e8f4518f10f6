"""host -> IP for the frontier's router: shared through Redis, never blocking the reactor.

Order of answers: an IP literal is itself; DNS_HOSTS_MAP pins; this process's cache;
the crawl's Redis cache (every worker sees every answer); finally the reactor's own
resolver (the one the downloader uses, so routing and fetching agree). Twisted's
resolver does not report record TTLs, so answers live DNS_CACHE_TTL seconds, and a
stale answer is still used up to DNS_CACHE_STALE_MAX when re-resolution fails.
Failures are cached DNS_NEGATIVE_TTL seconds. Every answer passes the address policy.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.error import DNSLookupError

from extensions.config import Kind, Setting, Table, above, read
from extensions.dns.policy import AddressPolicy, parse_networks
from extensions.dns.resolver import parse_hosts_map
from extensions.state.connection import as_str

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from extensions.state.connection import AnyAsyncRedis

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DnsSettings:
    hosts_map: dict[str, str]
    map_only: bool
    cache_ttl: float
    stale_max: float
    negative_ttl: float
    timeout: float
    policy: AddressPolicy

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DnsSettings:
        """Read DNS_* settings; ValueError names the setting that is wrong."""
        dns = read(DNS, settings)
        # A stale answer outlives the fresh one by definition.
        return dataclasses.replace(dns, stale_max=max(dns.stale_max, dns.cache_ttl))


HOSTS_MAP = Kind(
    "a dict, a JSON object or 'host=ip,...' of IP addresses",
    lambda settings, name: parse_hosts_map(settings.get(name)),
)
NETWORKS = Kind(
    "CIDR networks, a list or comma-separated",
    lambda settings, name: AddressPolicy(parse_networks(settings.getlist(name))),
)
DNS = Table(
    DnsSettings,
    Setting("DNS_HOSTS_MAP", "hosts_map", HOSTS_MAP),
    Setting("DNS_HOSTS_MAP_ONLY", "map_only", bool),
    Setting("DNS_CACHE_TTL", "cache_ttl", float, above(0)),
    Setting("DNS_CACHE_STALE_MAX", "stale_max", float, above(0)),
    Setting("DNS_NEGATIVE_TTL", "negative_ttl", float, above(0)),
    Setting("DNS_TIMEOUT", "timeout", float, above(0)),
    Setting("DNS_ALLOWED_NETWORKS", "policy", NETWORKS),
)


class SharedAnswer(NamedTuple):
    """One record of the crawl's shared DNS cache (keys.py: G:dns:<host>)."""

    kind: str  # "ok" or "fail"
    value: str  # the IP, or the failure's exception type
    fresh_until: float
    stale_until: float


def decode_shared(raw: bytes | str) -> SharedAnswer:
    """The shared cache's record "kind value fresh_until stale_until"; the one decoder,
    used by the resolver and by the operator verbs that name a host."""
    kind, value, fresh_until, stale_until = as_str(raw).split(" ")
    return SharedAnswer(kind, value, float(fresh_until), float(stale_until))


async def reactor_lookup(host: str, timeout: float) -> str:
    """The reactor's resolver: the one installed for the downloader, /etc/hosts included."""
    # Imported here: the installed reactor is only known once the crawl runs.
    from twisted.internet import reactor

    # Twisted types the timeouts as ints, but its resolvers hand them to callLater,
    # which takes fractions of a second (DNS_TIMEOUT is a float).
    lookup = reactor.resolve(host, timeout=(timeout,))  # type: ignore[arg-type]
    return await maybe_deferred_to_future(lookup)


def _literal(host: str) -> str | None:
    # Cheap test first: most hosts are names, and a failed parse raises (slow).
    if not host or not (host[0].isdigit() or host[0] == "["):
        return None
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


class HostResolver:
    """Resolves hosts for routing; raises DNSLookupError or AddressRefused."""

    def __init__(
        self,
        settings: DnsSettings,
        redis: AnyAsyncRedis | None = None,
        redis_key: Callable[[str], str] | None = None,
        stats: Any = None,
        clock: Callable[[], float] = time.time,
        system_lookup: Callable[[str, float], Awaitable[str]] | None = None,
    ) -> None:
        self.settings = settings
        self.system_lookup = system_lookup or reactor_lookup
        self.redis = redis
        self.redis_key = redis_key
        self.stats = stats
        self.clock = clock
        self._local: dict[str, tuple[str, float]] = {}  # host -> (ip, fresh_until)

    def _inc(self, name: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"dns/{name}")

    def cached(self, host: str) -> str | None:
        """An answer without I/O (literal, pinned or fresh local), policy-checked."""
        ip = _literal(host) or self.settings.hosts_map.get(host)
        if ip is None:
            entry = self._local.get(host)
            if entry is None or entry[1] < self.clock():
                return None
            ip = entry[0]
        return self.settings.policy.check(host, ip)

    async def resolve(self, host: str) -> str:
        ip = self.cached(host)
        if ip is not None:
            return ip
        if self.settings.map_only:
            self._inc("unmapped")
            raise DNSLookupError(f"{host} is not in DNS_HOSTS_MAP (DNS_HOSTS_MAP_ONLY is on)")
        shared = await self._shared_get(host)
        now = self.clock()
        if shared is not None and shared[0] == "ok" and shared[2] > now:
            self._inc("cache/shared_hit")
            return self._remember(host, shared[1], shared[2])
        if shared is not None and shared[0] == "fail" and shared[2] > now:
            self._inc("cache/negative_hit")
            raise DNSLookupError(f"{host}: recent lookup failed ({shared[1]})")
        return await self._lookup(host, stale=shared if shared and shared[0] == "ok" else None)

    async def _lookup(self, host: str, stale: SharedAnswer | None) -> str:
        self._inc("lookups")
        try:
            ip = await self.system_lookup(host, self.settings.timeout)
        except Exception as exc:  # DNS failures come in many types
            if stale is not None and stale[3] > self.clock():
                self._inc("cache/stale_used")
                logger.info("Resolving %s failed (%s); using the stale %s", host, exc, stale[1])
                return self._remember(host, stale[1], self.clock() + self.settings.negative_ttl)
            self._inc("failed")
            await self._shared_put(host, "fail", type(exc).__name__, self.settings.negative_ttl)
            raise DNSLookupError(f"{host}: {exc}") from None
        fresh_until = self.clock() + self.settings.cache_ttl
        await self._shared_put(host, "ok", ip, self.settings.stale_max)
        return self._remember(host, ip, fresh_until)

    def _remember(self, host: str, ip: str, fresh_until: float) -> str:
        self.settings.policy.check(host, ip)
        self._local[host] = (ip, fresh_until)
        return ip

    async def _shared_get(self, host: str) -> SharedAnswer | None:
        if self.redis is None or self.redis_key is None:
            return None
        raw = await self.redis.get(self.redis_key(host))
        return None if raw is None else decode_shared(raw)

    async def _shared_put(self, host: str, kind: str, value: str, keep_s: float) -> None:
        if self.redis is None or self.redis_key is None:
            return
        now = self.clock()
        fresh = self.settings.cache_ttl if kind == "ok" else self.settings.negative_ttl
        record = f"{kind} {value} {now + fresh} {now + keep_s}"
        await self.redis.set(self.redis_key(host), record, ex=max(1, int(keep_s)))
