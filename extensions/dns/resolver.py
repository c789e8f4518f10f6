"""Name resolution for the crawl: a static hosts map first, then the system resolver.

DNS_HOSTS_MAP pins names to addresses the way curl's --resolve does, so tests map
their virtual hosts to 127.x addresses without root or /etc/hosts edits. Names not
in the map resolve as usual (/etc/hosts included) through the reactor's resolver.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from typing import TYPE_CHECKING, Any

from scrapy.resolver import HostResolution
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

from extensions.dns.policy import AddressPolicy, parse_networks

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


@implementer(IResolutionReceiver)
class _PolicyReceiver:
    """Passes on only the addresses the address policy allows."""

    def __init__(self, receiver: IResolutionReceiver, host: str, policy: AddressPolicy) -> None:
        self.receiver, self.host, self.policy = receiver, host, policy

    def resolutionBegan(self, resolution: IHostResolution) -> None:
        self.receiver.resolutionBegan(resolution)

    def addressResolved(self, address: IAddress) -> None:
        # Resolvers answer with IP addresses; anything else has no IP to allow ("invalid").
        ip = address.host if isinstance(address, IPv4Address | IPv6Address) else str(address)
        reason = self.policy.refusal(ip)
        if reason is None:
            self.receiver.addressResolved(address)
        else:
            logger.warning("Refusing %s -> %s (%s)", self.host, ip, reason)

    def resolutionComplete(self) -> None:
        self.receiver.resolutionComplete()


@implementer(IHostnameResolver)
class HostsMapResolver:
    """IHostnameResolver: DNS_HOSTS_MAP pins, else the reactor's own resolver; every
    answer passes the address policy, so even a fetch that skipped the frontier
    (none should) cannot reach a refused network."""

    def __init__(
        self,
        reactor: ReactorBase,
        hosts_map: dict[str, str],
        map_only: bool = False,
        policy: AddressPolicy | None = None,
    ) -> None:
        self.reactor = reactor
        self.hosts_map = hosts_map
        self.map_only = map_only
        self.policy = policy or AddressPolicy()
        self.original_resolver: IHostnameResolver = reactor.nameResolver

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> HostsMapResolver:
        # Bad values raise ValueError naming the setting; the crawl command checks them
        # before the reactor starts so the operator sees one line, not a traceback.
        settings = crawler.settings
        return cls(
            reactor,
            parse_hosts_map(settings.get("DNS_HOSTS_MAP")),
            settings.getbool("DNS_HOSTS_MAP_ONLY"),
            AddressPolicy(parse_networks(settings.getlist("DNS_ALLOWED_NETWORKS"))),
        )

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
        receiver = _PolicyReceiver(resolutionReceiver, hostName, self.policy)
        pinned = self.hosts_map.get(hostName.lower().rstrip("."))
        if pinned is None and not self.map_only:
            return self.original_resolver.resolveHostName(
                receiver, hostName, portNumber, addressTypes, transportSemantics
            )
        # Pinned, or unmapped in a sandboxed crawl (tests, the demo): answer here,
        # with no address at all rather than asking a real DNS server.
        resolution = HostResolution(hostName)
        receiver.resolutionBegan(resolution)
        if pinned is not None:
            receiver.addressResolved(_address(pinned, portNumber))
        receiver.resolutionComplete()
        return resolution
