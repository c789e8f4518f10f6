"""host -> IP for the frontier's router and the downloader: shared through Redis, never
blocking the reactor, living as long as the DNS records say.

Order of answers: an IP literal is itself; DNS_HOSTS_MAP pins; this process's cache;
the crawl's Redis cache (every worker sees every answer, with its expiry); finally a
lookup (lookup.py: /etc/hosts, then the name servers). An answer is reused for its
record TTL clamped to DNS_TTL_MIN..DNS_CACHE_TTL (an /etc/hosts answer has no TTL: it
gets DNS_CACHE_TTL), and a stale answer is still used up to DNS_CACHE_STALE_MAX when
re-resolution fails. Failures are cached DNS_NEGATIVE_TTL seconds.

Of a name's addresses the one already in use is kept (its politeness clock is charged),
else the first the address policy allows; a name whose every address the policy refuses
raises AddressRefused, and that answer is cached like any other, so it is refused once
per TTL, not retried as a failure. One resolver serves the whole process (process_resolver):
the downloader's (resolver.py) and the frontier's agree on every name's address.

Stats (dns/...): lookups (answers asked of /etc/hosts or a name server), cache/local_hit,
cache/shared_hit (hit ratio = hits / (hits + lookups)), cache/negative_hit,
cache/stale_used, failed and failed/<cause> (lookup.py: nxdomain, nodata, timeout,
servfail, refused, error), refused/<rule> (policy.py: loopback, private, link_local...),
unmapped (DNS_HOSTS_MAP_ONLY), cache/local_evicted (a host's answer or failure dropped
from this process's cache, oldest first, to keep it under LOCAL_HOSTS entries), avoided
(an address a connection was refused at: the host's next answer takes another).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from twisted.internet.error import DNSLookupError

from extensions.config import Kind, Setting, Table, above, at_least, read
from extensions.dns.hosts_map import parse_hosts_map, pinned
from extensions.dns.lookup import Answer, LookupFailed, NameLookup, cause_of, parse_servers
from extensions.dns.policy import AddressPolicy, parse_networks
from extensions.state.connection import as_str

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from extensions.state.connection import AnyAsyncRedis

logger = logging.getLogger(__name__)

# Hosts this process remembers an answer (and, apart, a failure) for: a broad crawl meets
# millions of hosts and a dict kept one entry per host for the whole crawl (~200 B each).
# The crawl's Redis cache still holds an evicted host's answer until its stale limit, so
# eviction costs one GET, and the address in use is still kept (_choose reads the stale one).
LOCAL_HOSTS = 100_000


@dataclass(frozen=True)
class DnsSettings:
    hosts_map: dict[str, str]
    map_only: bool
    servers: tuple[tuple[str, int], ...]
    ipv6: bool  # AAAA answers a name without A records (lookup.py)
    ttl_min: float
    cache_ttl: float  # the cap on a record's TTL
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
SERVERS = Kind(
    "name server addresses ('ip' or 'ip:port'), a list or comma-separated",
    lambda settings, name: parse_servers(settings.get(name)),
)
NETWORKS = Kind(
    "CIDR networks, a list or comma-separated",
    lambda settings, name: AddressPolicy(parse_networks(settings.getlist(name))),
)
DNS = Table(
    DnsSettings,
    Setting("DNS_HOSTS_MAP", "hosts_map", HOSTS_MAP),
    Setting("DNS_HOSTS_MAP_ONLY", "map_only", bool),
    Setting("DNS_SERVERS", "servers", SERVERS),
    Setting("DNS_IPV6", "ipv6", bool),
    Setting("DNS_TTL_MIN", "ttl_min", float, above(0)),
    Setting("DNS_CACHE_TTL", "cache_ttl", float, above(0), at_least("DNS_TTL_MIN")),
    Setting("DNS_CACHE_STALE_MAX", "stale_max", float, above(0)),
    Setting("DNS_NEGATIVE_TTL", "negative_ttl", float, above(0)),
    Setting("DNS_TIMEOUT", "timeout", float, above(0)),
    Setting("DNS_ALLOWED_NETWORKS", "policy", NETWORKS),
)


class SharedAnswer(NamedTuple):
    """One record of the crawl's shared DNS cache (keys.py: D:dns:<host>, the host's page shard)."""

    kind: str  # "ok" or "fail"
    value: str  # the IP, or the failure's cause (before TTLs: its exception type)
    fresh_until: float
    stale_until: float


def decode_shared(raw: bytes | str) -> SharedAnswer:
    """The shared cache's record "kind value fresh_until stale_until"; the one decoder,
    used by the resolver and by the operator verbs that name a host."""
    kind, value, fresh_until, stale_until = as_str(raw).split(" ")
    return SharedAnswer(kind, value, float(fresh_until), float(stale_until))


def ip_literal(host: str) -> str | None:
    """The address a host that is an IP literal names ("[::1]" -> "::1"), else None."""
    # Cheap test first: most hosts are names, and a failed parse raises (slow).
    if not host or not (host[0].isdigit() or host[0] == "["):
        return None
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


class HostResolver:
    """Resolves hosts for routing and fetching; raises DNSLookupError or AddressRefused."""

    def __init__(
        self,
        settings: DnsSettings,
        redis: AnyAsyncRedis | None = None,
        redis_key: Callable[[str], str] | None = None,
        stats: Any = None,
        clock: Callable[[], float] = time.time,
        system_lookup: Callable[[str], Awaitable[Answer]] | None = None,
    ) -> None:
        self.settings = settings
        self.system_lookup = system_lookup or NameLookup(
            settings.servers, settings.timeout, ipv6=settings.ipv6
        )
        self.redis = redis
        self.redis_key = redis_key
        self.stats = stats
        self.clock = clock
        # Oldest first (insertion order, re-inserted on every answer); LOCAL_HOSTS each.
        self._local: dict[str, tuple[str, float]] = {}  # host -> (ip, fresh_until)
        self._negative: dict[str, tuple[str, float]] = {}  # host -> (cause, until)
        self._avoided: dict[tuple[str, str], float] = {}  # (host, ip) -> until: refused
        self.local_hosts = LOCAL_HOSTS

    def _inc(self, name: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"dns/{name}")

    def cached(self, host: str) -> str | None:
        """An answer without I/O (literal, pinned or fresh local), policy-checked."""
        ip = ip_literal(host) or pinned(self.settings.hosts_map, host)
        if ip is None:
            entry = self._local.get(host)
            if entry is None or entry[1] < self.clock():
                return None
            self._inc("cache/local_hit")
            ip = entry[0]
        return self.settings.policy.check(host, ip)

    def avoid(self, host: str, ip: str) -> None:
        """A connection to `ip` for `host` was refused or got no answer in time: the host's
        next answer is another of its addresses, if its name has one, for DNS_CACHE_TTL. A
        name with two A records one of which is down fails over to the other instead of
        waiting on the dead one (dns/avoided). A literal or a pinned name has no other
        address to take."""
        if ip_literal(host) or pinned(self.settings.hosts_map, host):
            return
        if not self.avoids(host, ip):  # one line per address and DNS_CACHE_TTL, not per page
            logger.info(
                "%s did not answer for %s (refused or timed out): its other addresses, if "
                "it has any, go first for %.0f s",
                ip,
                host,
                self.settings.cache_ttl,
            )
        self._avoided[(host, ip)] = self.clock() + self.settings.cache_ttl
        while len(self._avoided) > self.local_hosts:
            del self._avoided[next(iter(self._avoided))]
        entry = self._local.get(host)
        if entry is not None and entry[0] == ip:
            del self._local[host]  # the next resolve asks again (the shared one too)
        self._inc("avoided")

    @property
    def avoiding(self) -> bool:
        """Whether any address is avoided (or was, until evicted): a fast path for the
        check every leased URL passes (dispatch)."""
        return bool(self._avoided)

    def avoids(self, host: str, ip: str) -> bool:
        until = self._avoided.get((host, ip))
        return until is not None and until > self.clock()

    async def resolve(self, host: str) -> str:
        ip = self.cached(host)
        if ip is not None:
            return ip
        if self.settings.map_only:
            self._inc("unmapped")
            raise DNSLookupError(f"{host} is not in DNS_HOSTS_MAP (DNS_HOSTS_MAP_ONLY is on)")
        self._raise_if_failed(host)
        shared = await self._shared_get(host)
        if shared is not None and shared.fresh_until > self.clock():
            if shared.kind != "ok":
                self._put(self._negative, host, (shared.value, shared.fresh_until))  # another's
                self._raise_if_failed(host)
            elif not self.avoids(host, shared.value):
                self._inc("cache/shared_hit")
                return self._remember(host, shared.value, shared.fresh_until)
        return await self._lookup(host, stale=shared if shared and shared.kind == "ok" else None)

    def _raise_if_failed(self, host: str) -> None:
        """A negative answer still remembered (DNS_NEGATIVE_TTL) fails at once."""
        entry = self._negative.get(host)
        if entry is not None and entry[1] > self.clock():
            self._inc("cache/negative_hit")
            raise LookupFailed(host, entry[0], "a recent lookup failed")

    async def _lookup(self, host: str, stale: SharedAnswer | None) -> str:
        self._inc("lookups")
        try:
            answer = await self.system_lookup(host)
        except Exception as exc:  # DNS failures come in many types
            return await self._failed(host, exc, stale)
        now = self.clock()
        ttl = self._ttl(answer)
        ip = self._choose(host, answer.addresses, stale)
        await self._shared_put(host, "ok", ip, now + ttl, now + self.settings.stale_max)
        return self._remember(host, ip, now + ttl)

    async def _failed(self, host: str, exc: Exception, stale: SharedAnswer | None) -> str:
        now = self.clock()
        if stale is not None and stale.stale_until > now:
            self._inc("cache/stale_used")
            logger.info("Resolving %s failed (%s); using the stale %s", host, exc, stale.value)
            return self._remember(host, stale.value, now + self.settings.negative_ttl)
        cause = cause_of(exc)
        self._inc("failed")
        self._inc(f"failed/{cause}")
        until = now + self.settings.negative_ttl
        self._put(self._negative, host, (cause, until))
        await self._shared_put(host, "fail", cause, until, until)
        raise LookupFailed(host, cause, str(exc) if cause == "error" else "") from None

    def _ttl(self, answer: Answer) -> float:
        if answer.ttl_s is None:
            return self.settings.cache_ttl
        return min(max(answer.ttl_s, self.settings.ttl_min), self.settings.cache_ttl)

    def _choose(self, host: str, addresses: tuple[str, ...], stale: SharedAnswer | None) -> str:
        """The address in use if the answer still holds it, else the first allowed one,
        either not one a refused connection made this process avoid (unless all are); the
        first address when the policy refuses them all (counted once per answer)."""
        previous = self._local.get(host, ("",))[0] or (stale.value if stale else "")
        allowed = [ip for ip in addresses if self.settings.policy.refusal(ip) is None]
        allowed = [ip for ip in allowed if not self.avoids(host, ip)] or allowed
        if previous in allowed:
            return previous
        if allowed:
            return allowed[0]
        self._inc(f"refused/{self.settings.policy.refusal(addresses[0])}")
        return addresses[0]

    def _remember(self, host: str, ip: str, fresh_until: float) -> str:
        self._negative.pop(host, None)
        self._put(self._local, host, (ip, fresh_until))
        return self.settings.policy.check(host, ip)

    def _put(
        self, cache: dict[str, tuple[str, float]], host: str, entry: tuple[str, float]
    ) -> None:
        cache.pop(host, None)  # to the newest end
        cache[host] = entry
        while len(cache) > self.local_hosts:
            del cache[next(iter(cache))]
            self._inc("cache/local_evicted")

    async def _shared_get(self, host: str) -> SharedAnswer | None:
        if self.redis is None or self.redis_key is None:
            return None
        raw = await self.redis.get(self.redis_key(host))
        return None if raw is None else decode_shared(raw)

    async def _shared_put(
        self, host: str, kind: str, value: str, fresh_until: float, stale_until: float
    ) -> None:
        if self.redis is None or self.redis_key is None:
            return
        record = f"{kind} {value} {fresh_until} {stale_until}"
        keep_s = max(1, int(stale_until - self.clock()) + 1)
        await self.redis.set(self.redis_key(host), record, ex=keep_s)


_PROCESS: list[HostResolver] = []  # the latest process_resolver(), for the downloader


def process_resolver(settings: BaseSettings, stats: Any = None) -> HostResolver:
    """The frontier's resolver, registered as the process's: the downloader's resolver
    (resolver.py) asks it, so both use one cache and the same address for a name. A
    process runs one crawl (scrapy crawl), so the latest one built is the crawl's."""
    resolver = HostResolver(DnsSettings.from_settings(settings), stats=stats)
    _PROCESS[:] = [resolver]
    return resolver


def registered_resolver() -> HostResolver | None:
    return _PROCESS[0] if _PROCESS else None
