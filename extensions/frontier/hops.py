"""A robots.txt redirect hop to another host is charged to that host's IP (DESIGN
invariants 1, 2 and 7).

A robots.txt fetch spends a page's lease, so the IP charged is the page's. A redirect
to another host (apex and www, a CDN, one robots.txt for several sites) was a request
no politeness clock saw: the download handler trusts the leased IP for the leased host
only, so the hop went wherever the downloader resolved it, beside that host's own
fetches (measured: 1 ms after one of them ended, on a 1 s delay). Each hop to another
host is therefore resolved with the frontier's resolver (a refused address stays
refused: it is never contacted), then:

- on the lease's own politeness key, it is fetched under that lease after the
  configured delay, as before, with meta[LEASED_HOST_META] naming its host;
- elsewhere it takes a lease of its own on the target's key (lua/lease_ip.lua: once
  no fetch is in flight there, from the time the key is due), starts when it is due,
  at most ROBOTS_FETCH_TIMEOUT from now, and reports its outcome on that lease: 'done'
  charges the target's clock (and backoff), then 'ack'.

A hop that cannot be resolved or leased in time is a network failure: robots.txt
unreachable, a complete disallow for ROBOTS_ERROR_TTL (RFC 9309 2.3.1.4).

Stats (robots/hop/...): same_key (the lease's own key), leased (a lease of its own),
waited (a fetch in flight on its key, or paused: asked again), not_due (not due
within the wait: given up), unresolved (DNS failed), refused (the address policy
refused its address).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from extensions.dns.policy import AddressRefused
from extensions.fetch.leased_ip import LEASED_HOST_META, LEASED_IP_META, ROBOTS_META
from extensions.frontier.core import DownloadEvent
from extensions.robots.verdicts import retry_after_ttl

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from extensions.dns.cache import HostResolver
    from extensions.frontier.background import Background
    from extensions.frontier.batching import Batches
    from extensions.frontier.core import Frontier, IpLease
    from extensions.frontier.sharded import ShardedFrontier
    from extensions.robots.gate import Answer
    from extensions.robots.rules import RobotsPolicy

logger = logging.getLogger(__name__)

UNREACHABLE: Answer = (0, b"", {})
# A fetch in flight on the key ends at a time nobody knows: asked again at this pace,
# the hop is leased (ahead) before the key comes due, not after the key's next page
# took it (asked at lease_ip's "no earlier than now + delay", it lost that race by a few
# ms). A hop is rare (once per origin per ROBOTS_CACHE_TTL): the round trips are few.
POLL_S = 0.1


class RobotsHops:
    """Fetches a robots.txt redirect hop on an IP charged for its host (gate.HopRoute)."""

    def __init__(
        self,
        *,
        frontier: Frontier | ShardedFrontier,
        resolver: HostResolver,
        batches: Batches,
        background: Background,
        clock: Callable[[], float],
        policy: RobotsPolicy,
        hop_delay_s: float,
        key_of: Callable[[str, str], str],
    ) -> None:
        self.frontier = frontier
        self.resolver = resolver  # the frontier's: one address per name (dns/cache.py)
        self.batches = batches
        self.background = background
        self.stats = background.stats
        self.clock = clock
        self.policy = policy
        self.hop_delay_s = hop_delay_s  # FRONTIER_DELAY, between hops on one lease
        self.max_wait_s = policy.fetch_timeout  # ROBOTS_FETCH_TIMEOUT
        self.key_of = key_of  # (ip, host) -> the politeness key the frontier charges

    async def fetch(
        self,
        url: str,
        meta: dict[str, Any],
        download: Callable[[dict[str, Any]], Awaitable[Answer]],
    ) -> tuple[Answer, bool]:
        """The hop's answer, and whether it went out under the lease in `meta`."""
        host = urlsplit(url).hostname or ""
        if host == urlsplit(meta[ROBOTS_META]).hostname:
            await asyncio.sleep(self.hop_delay_s)  # the IP is still leased meanwhile
            return await download(meta), True
        ip = await self._resolve(host)
        if ip is None:
            return UNREACHABLE, False
        key = self.key_of(ip, host)
        if key == meta["frontier_lease"].rsplit("#", 1)[0]:
            self._inc("same_key")
            await asyncio.sleep(self.hop_delay_s)
            return await download({**meta, LEASED_HOST_META: host}), True
        lease = await self._lease(key)
        if lease is None:
            return UNREACHABLE, False
        self._inc("leased")
        hop = {"frontier_lease": lease.lease_id, LEASED_IP_META: ip, "download_slot": key}
        return await self._fetch_leased(lease, host, {**meta, **hop}, download), False

    async def _fetch_leased(
        self,
        lease: IpLease,
        host: str,
        meta: dict[str, Any],
        download: Callable[[dict[str, Any]], Awaitable[Answer]],
    ) -> Answer:
        """Start when the key is due, then report the outcome on its lease."""
        try:
            await asyncio.sleep(max(0.0, lease.at - self.clock()))
        except asyncio.CancelledError:  # closing before it was sent: the key is freed
            self.batches.report(DownloadEvent("ack", lease.lease_id, self.clock()))
            raise
        try:
            answer = await download({**meta, LEASED_HOST_META: host})
        except asyncio.CancelledError:
            self._report(lease.lease_id, host, UNREACHABLE)  # it may have reached the server
            raise
        self._report(lease.lease_id, host, answer)
        return answer

    async def _resolve(self, host: str) -> str | None:
        try:
            return await self.resolver.resolve(host)
        except AddressRefused as exc:
            logger.info("robots.txt redirect not followed: %s", exc)
            self._inc("refused")
        except Exception as exc:  # DNS failures come in many types (dns/lookup.py)
            logger.info("robots.txt redirect to %s not followed: %s", host, exc)
            self._inc("unresolved")
        return None

    async def _lease(self, key: str) -> IpLease | None:
        """A lease on `key` from its due time, None when that is not within max_wait_s
        (lease_ip.lua takes it ahead of that time: its queued pages cannot overtake)."""
        deadline = self.clock() + self.max_wait_s
        while not self.background.closing:
            lease = await self._try_lease(key, deadline)
            if lease is None:
                return None  # Redis failed: Background counted it (and may close the crawl)
            if lease.lease_id:
                return lease
            if lease.at > deadline:
                self._inc("not_due")
                return None
            self._inc("waited")  # in flight or paused: asked again
            await asyncio.sleep(POLL_S)
        return None

    async def _try_lease(self, key: str, latest: float) -> IpLease | None:
        got: list[IpLease] = []

        async def take() -> None:
            got.append(await self.frontier.lease_ip(key, latest))

        await self.background.guarded(take())
        return got[0] if got else None

    def _report(self, lease_id: str, host: str, answer: Answer) -> None:
        """'done' charges the key's clock and backoff, then the lease is acked."""
        status, _, headers = answer
        at = self.clock()
        wait = retry_after_ttl(headers, at, self.policy) if status in (429, 503) else None
        self.batches.events.append(DownloadEvent("done", lease_id, at, status, wait, host=host))
        self.batches.report(DownloadEvent("ack", lease_id, at))

    def _inc(self, name: str) -> None:
        self.stats.inc_value(f"robots/hop/{name}")
