"""The downloader's name resolution (TWISTED_DNS_RESOLVER): the frontier's resolver.

Scrapy's downloader resolves host names on its own, by default with getaddrinfo in a
thread: no TTL, IPv4 only, its own cache. Installed on the reactor, HostsMapResolver
answers every name with the process's HostResolver (cache.py: DNS_HOSTS_MAP pins, the
shared cache, record TTLs, the address policy), so routing and fetching agree on a
name's address, and even a fetch that skipped the frontier (none should) cannot reach a
refused network. Until the frontier's resolver exists it answers with its own, built
from the same settings (no shared cache: Redis is the frontier's).
"""

from __future__ import annotations

import ipaddress
import logging
from typing import TYPE_CHECKING

from scrapy.resolver import HostResolution
from scrapy.settings import BaseSettings, Settings
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

from extensions.dns.cache import DnsSettings, HostResolver, registered_resolver
from extensions.dns.hosts_map import parse_hosts_map
from extensions.dns.policy import AddressRefused

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.crawler import Crawler
    from twisted.internet.base import ReactorBase
    from twisted.internet.interfaces import IAddress, IHostResolution

# parse_hosts_map stays importable from here (crawlproj/operator.py).
__all__ = ["HostsMapResolver", "parse_hosts_map"]

logger = logging.getLogger(__name__)


def _address(ip: str, port: int) -> IAddress:
    if ipaddress.ip_address(ip).version == 6:
        return IPv6Address("TCP", ip, port)
    return IPv4Address("TCP", ip, port)


def _with_project_defaults(settings: BaseSettings) -> BaseSettings:
    """A crawl that is not this project's (bench_traps' stock Scrapy crawl uses only this
    resolver) reads crawlproj/settings.py's DNS defaults under its own values."""
    if "DNS_SERVERS" in settings:
        return settings
    merged = Settings()
    merged.setmodule("crawlproj.settings", priority="default")
    merged.setdict(settings.copy_to_dict(), priority="project")
    return merged


@implementer(IHostnameResolver)
class HostsMapResolver:
    """IHostnameResolver over the process's HostResolver: one address per name, the
    one the frontier routes the name's URLs to."""

    def __init__(self, reactor: ReactorBase, own: HostResolver) -> None:
        self.reactor = reactor
        self.own = own

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> HostsMapResolver:
        # Bad values raise ValueError naming the setting; the crawl command checks them
        # before the reactor starts so the operator sees one line, not a traceback.
        settings = _with_project_defaults(crawler.settings)
        return cls(reactor, HostResolver(DnsSettings.from_settings(settings)))

    def install_on_reactor(self) -> None:  # Scrapy calls it for TWISTED_DNS_RESOLVER
        self.reactor.installNameResolver(self)

    def resolveHostName(
        self,
        resolutionReceiver: IResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> IHostResolution:
        resolution = HostResolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)
        done = deferred_from_coro(self._resolve(hostName.lower().rstrip(".")))

        def answer(ip: str | None) -> None:
            if ip is not None:
                resolutionReceiver.addressResolved(_address(ip, portNumber))
            resolutionReceiver.resolutionComplete()

        done.addCallback(answer)
        return resolution

    async def _resolve(self, host: str) -> str | None:
        """The name's address; None (no address: Scrapy's DNSLookupError) when it fails."""
        resolver = registered_resolver() or self.own
        try:
            return await resolver.resolve(host)
        except AddressRefused as exc:
            logger.warning("Refusing %s", exc)
        except Exception as exc:  # DNS failures come in many types
            logger.debug("Resolving %s for a fetch failed: %s", host, exc)
        return None
