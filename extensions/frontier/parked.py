"""DNS for parked hosts: URLs whose host had no cached address wait in the frontier
(parked) until this worker resolves the host and routes them to its IP's back queue.

Replies name the parked hosts whose resolution is due, claimed for this worker. A
name that resolves into a refused network (DNS_ALLOWED_NETWORKS, extensions/dns/policy.py)
is a refusal, not a failure: its URLs are dropped at once, with one line naming the rule
(the answer stays cached, so later URLs of the host are rejected at admission, silently).
A failed resolution is retried FRONTIER_DNS_RETRIES times, FRONTIER_DNS_RETRY_DELAY * 4^n
apart, then the URLs are dropped so a finite crawl still ends.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from extensions.admission.politeness_key import PER_IP, PolitenessKeys
from extensions.dns.policy import AddressRefused

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from extensions.dns.cache import HostResolver
    from extensions.frontier.background import Background
    from extensions.frontier.core import Frontier, FrontierReply
    from extensions.frontier.sharded import ShardedFrontier

logger = logging.getLogger(__name__)


class ParkedHosts:
    def __init__(
        self,
        *,
        frontier: Frontier | ShardedFrontier,
        resolver: HostResolver,
        background: Background,
        note: Callable[[FrontierReply], None],
        clock: Callable[[], float],
        retries: int,
        retry_delay_s: float,
        retry_due: Callable[[float], None],
        politeness: PolitenessKeys = PER_IP,
    ) -> None:
        self.frontier = frontier
        self.resolver = resolver
        self.background = background
        self.stats = background.stats
        self.note = note
        self.clock = clock
        self.retries = retries
        self.retry_delay_s = retry_delay_s
        self.retry_due = retry_due  # the lease loop's timer: a retry is leased when due
        self.politeness = politeness  # FRONTIER_HOST_IP_NETWORKS, as admission's
        self.resolving: set[str] = set()  # hosts being resolved now (pending work)
        self._failures: dict[str, int] = {}  # host -> failed resolutions in a row
        # Hosts refused already: URLs parked after their first refusal (a later admit
        # batch of the same seeds) are dropped without another warning.
        self._refused_hosts: set[str] = set()

    def resolve_all(self, hosts: Iterable[str]) -> None:
        for host in hosts:
            if host not in self.resolving:
                self.resolving.add(host)
                self.background.spawn(self._resolve(host))

    async def _resolve(self, host: str) -> None:
        guarded = self.background.guarded
        try:
            try:
                ip = await self.resolver.resolve(host)
            except AddressRefused as exc:
                await guarded(self._refused(exc))
                return
            except Exception as exc:  # DNS errors come in many types
                await guarded(self._failed(host, exc))
                return
            self._failures.pop(host, None)
            self.stats.inc_value("frontier/dns/resolved")
            await guarded(self._route(host, ip))
        finally:
            self.resolving.discard(host)
            self.background.wake_engine()

    async def _route(self, host: str, ip: str) -> None:
        key = self.politeness.key(ip, host)  # the IP, or "<ip>@<host>" as at admission
        self.note(await self.frontier.route_pending(host, ip=key))

    async def _refused(self, exc: AddressRefused) -> None:
        if exc.host in self._refused_hosts:
            self.stats.inc_value("frontier/dns/refused_again")
        else:
            self._refused_hosts.add(exc.host)
            logger.warning("Dropping URLs of %s", exc)
            self.stats.inc_value(f"frontier/dns/refused/{exc.reason}")
        self.note(await self.frontier.route_pending(exc.host, drop=True))

    async def _failed(self, host: str, exc: Exception) -> None:
        failures = self._failures.get(host, 0) + 1
        self._failures[host] = failures
        self.stats.inc_value("frontier/dns/failed")
        if failures > self.retries:
            logger.warning(
                "Dropping URLs of %s: resolution failed %d times (%s)", host, failures, exc
            )
            self.note(await self.frontier.route_pending(host, drop=True))
            return
        retry_at = self.clock() + self.retry_delay_s * 4 ** (failures - 1)
        logger.info(
            "Resolving %s failed (%s); retry %d in %.0fs",
            host,
            exc,
            failures,
            retry_at - self.clock(),
        )
        self.note(await self.frontier.route_pending(host, retry_at=retry_at))
        self.retry_due(retry_at)  # no reply names this time: a lease claims it then
