"""Name lookups (extensions/dns/lookup.py) over a scripted twisted.names client, and the
downloader's resolver (extensions/dns/resolver.py) answering with the frontier's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy.settings import Settings
from twisted.internet import defer
from twisted.names import dns, error

import crawlproj.settings
from extensions.dns.cache import HostResolver, process_resolver, registered_resolver
from extensions.dns.hosts_map import parse_hosts_map, pinned
from extensions.dns.lookup import Answer, LookupFailed, NameLookup, follow, parse_servers
from extensions.dns.resolver import HostsMapResolver
from tests.project_settings import project_settings


def a(name: str, ip: str, ttl: int) -> dns.RRHeader:
    return dns.RRHeader(name.encode(), dns.A, dns.IN, ttl, dns.Record_A(ip, ttl))


def aaaa(name: str, ip: str, ttl: int) -> dns.RRHeader:
    return dns.RRHeader(name.encode(), dns.AAAA, dns.IN, ttl, dns.Record_AAAA(ip, ttl))


def cname(name: str, target: str, ttl: int) -> dns.RRHeader:
    return dns.RRHeader(name.encode(), dns.CNAME, dns.IN, ttl, dns.Record_CNAME(target, ttl))


class ScriptedClient:
    """twisted.names' client API, answering (qtype, name) from a dict at once."""

    def __init__(self, zone: dict[tuple[int, str], Any]) -> None:
        self.zone = zone
        self.asked: list[tuple[int, str]] = []

    def _ask(self, qtype: int, name: bytes) -> defer.Deferred[Any]:
        self.asked.append((qtype, name.decode()))
        found = self.zone.get((qtype, name.decode()), [])
        if isinstance(found, Exception):
            return defer.fail(found)
        return defer.succeed((found, [], []))

    def lookupAddress(self, name: bytes, timeout: Any = None) -> defer.Deferred[Any]:
        return self._ask(dns.A, name)

    def lookupIPV6Address(self, name: bytes, timeout: Any = None) -> defer.Deferred[Any]:
        return self._ask(dns.AAAA, name)


def lookup_with(
    zone: dict[tuple[int, str], Any], tmp_path: Path, hosts: str = "", ipv6: bool = True
) -> NameLookup:
    (tmp_path / "hosts").write_text(hosts)
    lookup = NameLookup((), 60.0, ipv6=ipv6, hosts_file=str(tmp_path / "hosts"))
    lookup._client = ScriptedClient(zone)
    return lookup


def test_ipv4_is_preferred_and_ipv6_answers_a_name_without_a_records(tmp_path: Path) -> None:
    zone = {
        (dns.A, "both.test"): [a("both.test", "93.184.216.1", 300)],
        (dns.AAAA, "both.test"): [aaaa("both.test", "2001:db8::1", 300)],
        (dns.AAAA, "six.test"): [aaaa("six.test", "2001:db8::2", 120)],
    }
    lookup = lookup_with(zone, tmp_path)
    assert asyncio.run(lookup("both.test")) == Answer(("93.184.216.1",), 300)
    assert asyncio.run(lookup("six.test")) == Answer(("2001:db8::2",), 120)
    assert (dns.AAAA, "both.test") not in lookup._client.asked
    with pytest.raises(LookupFailed, match="nodata") as failed:
        asyncio.run(lookup("empty.test"))
    assert failed.value.cause == "nodata"


def test_without_ipv6_a_name_without_a_records_is_nodata_and_aaaa_never_asked(
    tmp_path: Path,
) -> None:
    zone = {
        (dns.A, "both.test"): [a("both.test", "93.184.216.1", 300)],
        (dns.AAAA, "six.test"): [aaaa("six.test", "2001:db8::2", 120)],
    }
    hosts = "::1 six-hosts.test\n"
    lookup = lookup_with(zone, tmp_path, hosts, ipv6=False)
    assert asyncio.run(lookup("both.test")) == Answer(("93.184.216.1",), 300)
    for name in ("six.test", "six-hosts.test"):  # /etc/hosts' IPv6 line is skipped too
        with pytest.raises(LookupFailed) as failed:
            asyncio.run(lookup(name))
        assert failed.value.cause == "nodata"
    assert [qtype for qtype, _ in lookup._client.asked] == [dns.A] * 3
    # On (the default), the same /etc/hosts line answers without asking a server.
    lookup = lookup_with(zone, tmp_path, hosts)
    assert asyncio.run(lookup("six-hosts.test")) == Answer(("::1",), None)
    assert lookup._client.asked == []


def test_etc_hosts_answers_first_without_a_ttl(tmp_path: Path) -> None:
    lookup = lookup_with({}, tmp_path, "127.0.0.1 localhost\n::1 localhost\n")
    assert asyncio.run(lookup("localhost")) == Answer(("127.0.0.1",), None)
    assert lookup._client.asked == []


def test_a_cname_chain_lives_as_long_as_its_shortest_record(tmp_path: Path) -> None:
    zone = {
        (dns.A, "www.test"): [
            cname("www.test", "cdn.test", 600),
            a("cdn.test", "93.184.216.2", 20),
        ],
        (dns.A, "alias.test"): [cname("alias.test", "www.test", 5)],  # the end is asked next
    }
    lookup = lookup_with(zone, tmp_path)
    assert asyncio.run(lookup("www.test")) == Answer(("93.184.216.2",), 20)
    assert asyncio.run(lookup("alias.test")) == Answer(("93.184.216.2",), 5)
    assert follow([cname("loop.test", "loop.test", 1)], b"loop.test", dns.A, 9.0)[0] == ()


@pytest.mark.parametrize(
    ("exc", "cause"),
    [
        (error.DNSNameError(), "nxdomain"),
        (error.DNSServerError(), "servfail"),
        (error.DNSQueryRefusedError(), "refused"),
        (error.DNSQueryTimeoutError(None), "timeout"),
        (defer.TimeoutError(), "timeout"),
        (error.DNSFormatError(), "error"),
    ],
)
def test_failures_name_their_cause(tmp_path: Path, exc: Exception, cause: str) -> None:
    lookup = lookup_with({(dns.A, "bad.test"): exc}, tmp_path)
    with pytest.raises(LookupFailed) as failed:
        asyncio.run(lookup("bad.test"))
    assert failed.value.cause == cause


def test_timeouts_follow_twisteds_schedule_scaled_to_dns_timeout() -> None:
    assert NameLookup((), 60.0, ipv6=True).timeouts == (1, 3, 11, 45)
    assert sum(NameLookup((), 6.0, ipv6=True).timeouts) == pytest.approx(6.0)


def test_dns_servers_parse_ip_and_port() -> None:
    assert parse_servers("10.0.0.53, 127.0.0.1:5353") == (("10.0.0.53", 53), ("127.0.0.1", 5353))
    assert parse_servers(["[::1]:5353", "2001:db8::53"]) == (("::1", 5353), ("2001:db8::53", 53))
    assert parse_servers("") == parse_servers([]) == ()
    for bad in ("ns.example:53", "127.0.0.1:0", "127.0.0.1:x"):
        with pytest.raises(ValueError):
            parse_servers(bad)


class Receiver:
    def __init__(self) -> None:
        self.addresses: list[str] = []
        self.complete = False

    def resolutionBegan(self, resolution: Any) -> None:
        pass

    def addressResolved(self, address: Any) -> None:
        self.addresses.append(address.host)

    def resolutionComplete(self) -> None:
        self.complete = True


async def downloader_answer(resolver: HostsMapResolver, host: str) -> list[str]:
    receiver = Receiver()
    resolver.resolveHostName(receiver, host, 80)
    for _ in range(10):  # pins and cached answers need no I/O: a few loop turns
        if receiver.complete:
            break
        await asyncio.sleep(0)
    assert receiver.complete
    return receiver.addresses


def test_the_downloader_asks_the_frontiers_resolver() -> None:
    values = {"DNS_HOSTS_MAP": {"pinned.test": "93.184.216.9", "inner.test": "10.0.0.9"}}
    settings = project_settings(values)
    own = HostResolver(process_resolver(settings).settings)
    downloader = HostsMapResolver(reactor=None, own=own)  # type: ignore[arg-type]
    frontier = registered_resolver()
    assert frontier is not None and frontier is not own
    frontier._local["learned.test"] = ("93.184.216.10", float("inf"))  # routed by the frontier

    async def go() -> list[list[str]]:
        hosts = ("Learned.Test.", "pinned.test", "inner.test")
        return [await downloader_answer(downloader, host) for host in hosts]

    # The frontier's answer, a pin, and a private address refused (no address at all).
    assert asyncio.run(go()) == [["93.184.216.10"], ["93.184.216.9"], []]


def test_a_crawl_of_another_project_gets_the_dns_defaults() -> None:
    # bench_traps' stock Scrapy crawl installs only this resolver, with three settings.
    values = {"DNS_HOSTS_MAP": {"a.test": "127.0.10.1"}, "DNS_HOSTS_MAP_ONLY": True}
    process = SimpleNamespace(settings=Settings(values))  # Scrapy passes its CrawlerProcess
    resolver = HostsMapResolver.from_crawler(process, reactor=None)  # type: ignore[arg-type]
    assert resolver.own.settings.hosts_map == {"a.test": "127.0.10.1"}
    assert resolver.own.settings.cache_ttl == crawlproj.settings.DNS_CACHE_TTL


def test_a_wildcard_pin_answers_every_name_under_it_not_the_name_itself() -> None:
    hosts = parse_hosts_map({"*.farm.test": "127.0.51.1", "own.farm.test": "127.0.51.2"})
    assert pinned(hosts, "w3f9a1.farm.test") == "127.0.51.1"
    assert pinned(hosts, "a.b.farm.test") == "127.0.51.1"
    assert pinned(hosts, "own.farm.test") == "127.0.51.2"  # an exact key wins
    assert pinned(hosts, "farm.test") is None
    assert pinned(hosts, "farm.test.evil") is None
    assert pinned({}, "w1.farm.test") is None
    values = {
        "DNS_HOSTS_MAP": hosts,
        "DNS_HOSTS_MAP_ONLY": True,
        "DNS_ALLOWED_NETWORKS": ["127.0.0.0/8"],
    }
    process = SimpleNamespace(settings=Settings(values))
    resolver = HostsMapResolver.from_crawler(process, reactor=None)  # type: ignore[arg-type]
    assert asyncio.run(resolver.own.resolve("x.farm.test")) == "127.0.51.1"
