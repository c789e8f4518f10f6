"""Asking name servers for a host's addresses, and how long the answer holds.

Why twisted.names: it ships with Twisted (no new dependency), runs on the reactor the
crawl already runs (no thread per lookup, as getaddrinfo needs), and its answers carry
each record's TTL, which getaddrinfo (Scrapy's and Twisted's default resolvers) drops.
dnspython or aiodns would give the same answers for one more dependency (aiodns a C one).

A lookup reads /etc/hosts first, as the system resolver does (those answers carry no
TTL), then asks DNS_SERVERS, or the name servers of /etc/resolv.conf when it is empty,
for A records, and for AAAA only when a name has none: IPv4 is preferred (most hosts
serve both, and an IPv6 route is not a given), IPv6-only hosts still resolve. DNS_IPV6
off (a crawler host without an IPv6 route) never asks for AAAA and skips /etc/hosts'
IPv6 lines: such a name is nodata instead of a connection that cannot succeed. CNAME
chains are followed; an answer lives as long as the shortest-lived record of its chain.
Search domains (resolv.conf "search") are not applied: crawled URLs name full hosts.

A failure is a LookupFailed (a DNSLookupError, like the downloader's own) whose cause
names it for the stats: nxdomain, nodata (the name exists, without addresses), timeout,
servfail, refused (the name server refused the query), error.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.names import dns, error
from twisted.names.hosts import searchFileForAll
from twisted.python.filepath import FilePath

HOSTS_FILE = "/etc/hosts"
RESOLV_CONF = "/etc/resolv.conf"
# Twisted's retry schedule (s per attempt) sums to 60, Scrapy's DNS_TIMEOUT default:
# the same shape, scaled to DNS_TIMEOUT.
_ATTEMPTS_S = (1, 3, 11, 45)
_CNAME_HOPS = 8
_CAUSES: tuple[tuple[type[BaseException], str], ...] = (
    (error.DNSNameError, "nxdomain"),
    (error.DNSServerError, "servfail"),
    (error.DNSQueryRefusedError, "refused"),
    (error.DNSQueryTimeoutError, "timeout"),
    (defer.TimeoutError, "timeout"),
)


@dataclass(frozen=True)
class Answer:
    addresses: tuple[str, ...]  # one family: IPv4, or IPv6 when the name has no A record
    ttl_s: float | None  # the chain's shortest record TTL; None from /etc/hosts


class LookupFailed(DNSLookupError):
    """A name that did not resolve; `cause` is a stats key (nxdomain, timeout...)."""

    def __init__(self, host: str, cause: str, detail: str = "") -> None:
        super().__init__(f"{host}: {cause}" + (f" ({detail})" if detail else ""))
        self.host, self.cause = host, cause


def cause_of(exc: BaseException) -> str:
    if isinstance(exc, LookupFailed):
        return exc.cause
    return next((cause for kind, cause in _CAUSES if isinstance(exc, kind)), "error")


def parse_servers(raw: Iterable[str] | str | None) -> tuple[tuple[str, int], ...]:
    """DNS_SERVERS: "ip", "ip:port", "[ipv6]:port" or "ipv6", a list or comma-separated."""
    items = raw.split(",") if isinstance(raw, str) else list(raw or ())
    return tuple(_server(str(item).strip()) for item in items if str(item).strip())


def _server(item: str) -> tuple[str, int]:
    host, port = item, "53"
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        port = rest.removeprefix(":") or port
    elif item.count(":") == 1:
        host, port = item.split(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(item)
    return str(ipaddress.ip_address(host)), int(port)  # ValueError when not an IP


class NameLookup:
    """host -> Answer over twisted.names; one instance per process (its client is
    built on first use, once the crawl's reactor is installed). `ipv6`: DNS_IPV6."""

    def __init__(
        self,
        servers: tuple[tuple[str, int], ...],
        timeout_s: float,
        *,
        ipv6: bool,
        hosts_file: str = HOSTS_FILE,
        resolv_conf: str = RESOLV_CONF,
    ) -> None:
        self.servers = servers
        self.ipv6 = ipv6
        self.timeouts = tuple(a * timeout_s / sum(_ATTEMPTS_S) for a in _ATTEMPTS_S)
        self.hosts_file = FilePath(hosts_file)
        self.resolv_conf = resolv_conf
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            # Imported here: twisted.names.client imports the global reactor.
            from twisted.names import client

            if self.servers:
                self._client = client.Resolver(servers=list(self.servers))
            else:  # re-read by Twisted when the file changes
                self._client = client.Resolver(resolv=self.resolv_conf)
        return self._client

    async def __call__(self, host: str) -> Answer:
        try:
            name = host.encode("idna")
        except UnicodeError:
            raise LookupFailed(host, "error", "not a valid host name") from None
        listed = searchFileForAll(self.hosts_file, name)
        ipv4 = tuple(ip for ip in listed if ":" not in ip)
        if ipv4 or (listed and self.ipv6):
            return Answer(ipv4 or tuple(listed), None)
        answer = await self._records(host, name, dns.A)
        if answer is None and self.ipv6:
            answer = await self._records(host, name, dns.AAAA)
        if answer is None:
            raise LookupFailed(host, "nodata")
        return answer

    async def _records(self, host: str, name: bytes, qtype: int) -> Answer | None:
        ttl = float("inf")
        for _ in range(_CNAME_HOPS):
            ask = self.client().lookupAddress if qtype == dns.A else self.client().lookupIPV6Address
            try:
                records, _authority, _additional = await _wait(ask(name, timeout=self.timeouts))
            except Exception as exc:  # twisted.names fails in many types
                raise LookupFailed(host, cause_of(exc), type(exc).__name__) from None
            addresses, target, ttl = follow(records, name, qtype, ttl)
            if addresses:
                return Answer(addresses, ttl)
            if target is None:
                return None
            name = target  # the chain leaves this response: ask for its end
        raise LookupFailed(host, "error", "CNAME chain too long")


def follow(
    records: list[dns.RRHeader], name: bytes, qtype: int, ttl: float
) -> tuple[tuple[str, ...], bytes | None, float]:
    """(addresses, a CNAME target this response does not answer, the shortest TTL)
    from one response, following CNAMEs from `name`."""
    by_name: dict[bytes, list[dns.RRHeader]] = {}
    for rr in records:
        by_name.setdefault(rr.name.name.lower(), []).append(rr)
    current, hops = name.lower(), 0
    while hops <= _CNAME_HOPS:
        here = by_name.get(current, [])
        found = [rr for rr in here if rr.type == qtype]
        if found:
            return tuple(_ip(rr) for rr in found), None, min([ttl, *(rr.ttl for rr in found)])
        alias = next((rr for rr in here if rr.type == dns.CNAME), None)
        if alias is None:
            return (), (current if hops else None), ttl
        ttl = min(ttl, alias.ttl)
        target: Any = alias.payload  # a Record_CNAME (typed as any record)
        current, hops = target.name.name.lower(), hops + 1
    return (), None, ttl


def _ip(rr: dns.RRHeader) -> str:
    record: Any = rr.payload  # a Record_A or Record_AAAA (typed as any record)
    if rr.type == dns.A:
        return str(record.dottedQuad())
    return socket.inet_ntop(socket.AF_INET6, record.address)


async def _wait(deferred: defer.Deferred[Any]) -> Any:
    # The crawl runs the asyncio reactor (settings.TWISTED_REACTOR): its loop is running.
    return await deferred.asFuture(asyncio.get_running_loop())
