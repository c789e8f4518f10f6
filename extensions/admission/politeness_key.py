"""The politeness key: what the frontier schedules and charges (DESIGN invariants 1, 2).

Why: politeness is per server, and a server is its IP address, so every host on an IP
shares one back queue, ready-heap entry, state hash (P:ip:<key>) and lease ids
("<key>#<n>"). Behind a CDN's anycast address thousands of unrelated sites share one IP,
and one slot for all of them would fetch each at a thousandth of the pace (the seeds: "key
on the resolved IP, or the (host, IP) pair"). For an address inside one of
FRONTIER_HOST_IP_NETWORKS the key is "<ip>@<host>": each host there has its own slot,
delay, backoff and Crawl-delay. Everywhere else it is the bare IP, as before, so a crawl
queued without the setting resumes unchanged (a key without "@" is an IP).

"@" is in no host name or IP address, and no separator of the frontier's keys and records
('|' front-queue, pending and lease entries, '#' lease ids, '/' lanes, ',' pattern records)
is in a key: every Lua parse of an id or entry reads a key whole.

A key lives in the shard of its IP (keys.py, ShardedKeys.index_of): every key of one
address sits in one slot, so what an operator sets on the IP (pause, throttle) is read by
the scripts next to each of its per-host keys' own state (ready_heap.lua, lease.lua). The
connection goes to the bare IP (meta["frontier_ip"]); the downloader slot is the key.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from extensions.config import Kind, Setting, Table

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

SEPARATOR = "@"
# Distinct addresses whose answer is remembered (admission asks once per URL).
_MAX_ANSWERS = 100_000


def ip_of(key: str) -> str:
    """The address of a politeness key (the key itself outside the networks)."""
    return key.partition(SEPARATOR)[0]


def host_of(key: str) -> str | None:
    """The host of a per-host key, None for a bare IP."""
    _, sep, host = key.partition(SEPARATOR)
    return host if sep else None


def parse_key(text: str) -> str:
    """An IP ("[::1]" too) or a key "<ip>@<host>" as the frontier spells it; ValueError
    when `text` is neither (a host name)."""
    ip, sep, host = text.partition(SEPARATOR)
    address = str(ipaddress.ip_address(ip.strip("[]")))
    return f"{address}{sep}{host.lower().rstrip('.')}" if sep and host else address


def parse_networks(raw: list[str]) -> tuple[IPNetwork, ...]:
    """CIDR strings; ValueError on the first that is not one (the setting's reader names
    the setting and its value)."""
    return tuple(ipaddress.ip_network(item.strip(), strict=False) for item in raw if item.strip())


@dataclass(frozen=True)
class PolitenessKeys:
    """FRONTIER_HOST_IP_NETWORKS: where politeness is keyed on (host, IP)."""

    networks: tuple[IPNetwork, ...]
    _answers: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def covers(self, ip: str) -> bool:
        """Whether `ip` lies in one of the networks (an unparsable one never does)."""
        if not self.networks:
            return False
        answer = self._answers.get(ip)
        if answer is None:
            if len(self._answers) >= _MAX_ANSWERS:
                self._answers.clear()
            try:
                addr = ipaddress.ip_address(ip)
            except ValueError:
                addr = None
            answer = addr is not None and any(
                addr in net for net in self.networks if net.version == addr.version
            )
            self._answers[ip] = answer
        return answer

    def key(self, ip: str, host: str) -> str:
        """The key `host`'s URLs on `ip` are scheduled under ('' stays '': unresolved)."""
        if ip and self.covers(ip):
            return f"{ip}{SEPARATOR}{host}"
        return ip


NETWORKS = Kind(
    "CIDR networks, a list or comma-separated",
    lambda settings, name: parse_networks(settings.getlist(name)),
)
# Everywhere per IP: what a component built without settings uses (benches, tests).
PER_IP = PolitenessKeys(())
HOST_IP_KEYS = Table(PolitenessKeys, Setting("FRONTIER_HOST_IP_NETWORKS", "networks", NETWORKS))
