"""Which resolved addresses the crawler may connect to.

A public crawler that follows any link must not be turned against its own network:
after resolution, loopback, private, link-local (169.254.169.254, the cloud metadata
service, included), multicast, reserved and unspecified addresses are refused, IPv4
and IPv6 alike (IPv4-mapped IPv6 is judged by its IPv4), unless the address lies in
DNS_ALLOWED_NETWORKS. Tests and the demo allow their 127.x test web that way.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Checked in this order; the first that applies names the refusal (a stats key).
_CATEGORIES = ("unspecified", "loopback", "link_local", "multicast", "private", "reserved")

_MAX_ANSWERS = 100_000


class AddressRefused(Exception):
    """A host resolved to an address the policy refuses; `reason` names the category."""

    def __init__(self, host: str, ip: str, reason: str) -> None:
        super().__init__(f"{host} resolved to {ip} ({reason}), outside DNS_ALLOWED_NETWORKS")
        self.host, self.ip, self.reason = host, ip, reason


def parse_networks(raw: Iterable[str] | str | None) -> tuple[IPNetwork, ...]:
    """DNS_ALLOWED_NETWORKS: CIDR strings, a list or comma-separated."""
    if not raw:
        return ()
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    networks = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"DNS_ALLOWED_NETWORKS: {item!r} is not a CIDR network") from None
    return tuple(networks)


class AddressPolicy:
    def __init__(self, allowed: Iterable[IPNetwork] = ()) -> None:
        self.allowed = tuple(allowed)
        self._answers: dict[str, str | None] = {}

    def refusal(self, ip: str) -> str | None:
        """Why `ip` may not be contacted ("private", "loopback", ...), or None."""
        # Asked for every admitted URL, about few distinct IPs: remember the answers.
        if ip in self._answers:
            return self._answers[ip]
        if len(self._answers) >= _MAX_ANSWERS:
            self._answers.clear()
        answer = self._judge(ip)
        self._answers[ip] = answer
        return answer

    def _judge(self, ip: str) -> str | None:
        try:
            addr: IPAddress = ipaddress.ip_address(ip)
        except ValueError:
            return "invalid"
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        if any(addr in net for net in self.allowed if net.version == addr.version):
            return None
        for category in _CATEGORIES:
            if getattr(addr, f"is_{category}"):
                return category
        if not addr.is_global:
            return "reserved"  # shared address space (100.64/10) and other non-global
        return None

    def check(self, host: str, ip: str) -> str:
        reason = self.refusal(ip)
        if reason is not None:
            raise AddressRefused(host, ip, reason)
        return ip
