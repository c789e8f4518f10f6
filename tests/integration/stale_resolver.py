"""The downloader's resolver with a stale view of DNS, for crawls that prove the fetch
goes to the IP the frontier charged: TWISTED_DNS_RESOLVER = this class answers from
TEST_STALE_HOSTS_MAP (what Scrapy's own cache may still hold after a record changed),
while the frontier resolves DNS_HOSTS_MAP as usual. Names not in the map get no address.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from scrapy.resolver import HostResolution
from twisted.internet.address import IPv4Address
from twisted.internet.interfaces import IHostnameResolver
from zope.interface import implementer

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.base import ReactorBase
    from twisted.internet.interfaces import IAddress, IHostResolution, IResolutionReceiver


@implementer(IHostnameResolver)
class StaleResolver:
    def __init__(self, reactor: ReactorBase, answers: dict[str, str]) -> None:
        self.reactor = reactor
        self.answers = answers

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> StaleResolver:
        return cls(reactor, dict(crawler.settings.getdict("TEST_STALE_HOSTS_MAP")))

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
        ip = self.answers.get(hostName.lower())
        if ip is not None:
            resolutionReceiver.addressResolved(IPv4Address("TCP", ip, portNumber))
        resolutionReceiver.resolutionComplete()
        return resolution
