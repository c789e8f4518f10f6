"""Name resolution for the crawl: a static hosts map first, then the system resolver.

DNS_HOSTS_MAP pins names to addresses the way curl's --resolve does, so tests map
their virtual hosts to 127.x addresses without root or /etc/hosts edits. Names not
in the map resolve as usual (/etc/hosts included) through the reactor's resolver.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy.resolver import HostResolution
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.crawler import Crawler
    from twisted.internet.base import ReactorBase
    from twisted.internet.interfaces import IAddress, IHostResolution

logger = logging.getLogger(__name__)


def parse_hosts_map(raw: Any) -> dict[str, str]:
    """DNS_HOSTS_MAP as a dict, from a dict, a JSON object or "host=ip,host2=ip"."""
    if not raw:
        return {}
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("{"):
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"DNS_HOSTS_MAP is not valid JSON: {exc}") from None
        else:
            raw = dict(_pair(item) for item in text.split(",") if item.strip())
    if not isinstance(raw, dict):
        raise ValueError("DNS_HOSTS_MAP must be a dict, a JSON object or 'host=ip,...'")
    hosts: dict[str, str] = {}
    for host, ip in raw.items():
        try:
            hosts[str(host).lower().rstrip(".")] = str(ipaddress.ip_address(str(ip).strip()))
        except ValueError:
            raise ValueError(f"DNS_HOSTS_MAP: {ip!r} for {host!r} is not an IP address") from None
    return hosts


def _pair(item: str) -> tuple[str, str]:
    host, sep, ip = item.partition("=")
    if not sep:
        raise ValueError(f"DNS_HOSTS_MAP entry {item.strip()!r} is not host=ip")
    return host.strip(), ip.strip()


def _address(ip: str, port: int) -> IAddress:
    if ipaddress.ip_address(ip).version == 6:
        return IPv6Address("TCP", ip, port)
    return IPv4Address("TCP", ip, port)


@implementer(IHostnameResolver)
class HostsMapResolver:
    """IHostnameResolver: DNS_HOSTS_MAP pins, else the reactor's own resolver."""

    def __init__(
        self, reactor: ReactorBase, hosts_map: dict[str, str], map_only: bool = False
    ) -> None:
        self.reactor = reactor
        self.hosts_map = hosts_map
        self.map_only = map_only
        self.original_resolver: IHostnameResolver = reactor.nameResolver

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> HostsMapResolver:
        # A bad map raises ValueError naming DNS_HOSTS_MAP; the crawl command checks
        # it before the reactor starts so the operator sees one line, not a traceback.
        settings = crawler.settings
        hosts_map = parse_hosts_map(settings.get("DNS_HOSTS_MAP"))
        return cls(reactor, hosts_map, settings.getbool("DNS_HOSTS_MAP_ONLY", False))

    def install_on_reactor(self) -> None:
        self.reactor.installNameResolver(self)

    def resolveHostName(
        self,
        resolutionReceiver: IResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> IHostResolution:
        pinned = self.hosts_map.get(hostName.lower().rstrip("."))
        if pinned is None and self.map_only:
            # Sandboxed crawls (tests, the demo): an unmapped name resolves to
            # nothing rather than reaching a real DNS server.
            resolution = HostResolution(hostName)
            resolutionReceiver.resolutionBegan(resolution)
            resolutionReceiver.resolutionComplete()
            return resolution
        if pinned is None:
            return self.original_resolver.resolveHostName(
                resolutionReceiver, hostName, portNumber, addressTypes, transportSemantics
            )
        resolution = HostResolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)
        resolutionReceiver.addressResolved(_address(pinned, portNumber))
        resolutionReceiver.resolutionComplete()
        return resolution


class HostResolver:
    """host -> IP for the frontier's router, without blocking the reactor.

    Pinned names (DNS_HOSTS_MAP) answer at once; others go through the reactor's
    resolver (the one installed above, so fetches and routing agree) and are
    cached for DNS_CACHE_TTL seconds.
    """

    def __init__(
        self, hosts_map: dict[str, str], ttl: float, timeout: float, map_only: bool = False
    ) -> None:
        self.hosts_map = hosts_map
        self.map_only = map_only
        self.ttl = ttl
        self.timeout = timeout
        self._cache: dict[str, tuple[str, float]] = {}

    def cached(self, host: str) -> str | None:
        pinned = self.hosts_map.get(host)
        if pinned is not None:
            return pinned
        entry = self._cache.get(host)
        if entry is None or entry[1] < time.monotonic():
            return None
        return entry[0]

    async def resolve(self, host: str) -> str:
        ip = self.cached(host)
        if ip is not None:
            return ip
        if self.map_only:
            raise DNSLookupError(f"{host} is not in DNS_HOSTS_MAP (DNS_HOSTS_MAP_ONLY is on)")
        from twisted.internet import reactor

        ip = await maybe_deferred_to_future(reactor.resolve(host, timeout=(self.timeout,)))
        self._cache[host] = (ip, time.monotonic() + self.ttl)
        return ip
