"""The frontier's resolver: pins, shared Redis cache, stale answers, negative caching and
the address policy. Real Redis; the system resolver is replaced by a scripted one so no
DNS server is ever asked."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis.asyncio as aioredis
from twisted.internet.error import DNSLookupError

from extensions.dns.cache import DnsSettings, HostResolver
from extensions.dns.policy import AddressPolicy, AddressRefused, parse_networks
from extensions.state.keys import FrontierKeys

KEYS = FrontierKeys("dnstest")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ScriptedDns:
    """Answers from a dict; a missing name fails like a real NXDOMAIN."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, host: str, timeout: float) -> str:
        self.asked.append(host)
        if host not in self.answers:
            raise DNSLookupError(host)
        return self.answers[host]


def dns_settings(**overrides: object) -> DnsSettings:
    base = {
        "hosts_map": {"pinned.test": "93.184.216.7"},
        "map_only": False,
        "cache_ttl": 60.0,
        "stale_max": 600.0,
        "negative_ttl": 10.0,
        "timeout": 5.0,
        "policy": AddressPolicy(),
    }
    return DnsSettings(**{**base, **overrides})  # type: ignore[arg-type]


@pytest.fixture
def resolvers(redis_url: str, redis_client) -> Iterator:
    clients: list[aioredis.Redis] = []

    def make(dns: ScriptedDns, clock: Clock, **overrides: object) -> HostResolver:
        client = aioredis.Redis.from_url(redis_url)
        clients.append(client)
        return HostResolver(
            dns_settings(**overrides), client, KEYS.dns, clock=clock, system_lookup=dns
        )

    yield make


def run(coro):
    return asyncio.run(coro)


def test_pins_and_literals_answer_without_lookup(resolvers) -> None:
    dns = ScriptedDns({})
    resolver = resolvers(dns, Clock())
    assert resolver.cached("pinned.test") == "93.184.216.7"
    assert run(resolver.resolve("203.0.114.9")) == "203.0.114.9"
    assert dns.asked == []


def test_one_workers_answer_serves_every_worker(resolvers) -> None:
    clock = Clock()
    dns_a, dns_b = ScriptedDns({"shared.test": "93.184.216.20"}), ScriptedDns({})
    first, second = resolvers(dns_a, clock), resolvers(dns_b, clock)

    async def go() -> tuple[str, str]:
        return await first.resolve("shared.test"), await second.resolve("shared.test")

    assert run(go()) == ("93.184.216.20", "93.184.216.20")
    assert (dns_a.asked, dns_b.asked) == (["shared.test"], [])
    assert second.cached("shared.test") == "93.184.216.20"


def test_stale_answer_is_used_when_reresolution_fails(resolvers) -> None:
    clock = Clock()
    dns = ScriptedDns({"flaky.test": "93.184.216.30"})
    resolver = resolvers(dns, clock)

    async def go() -> str:
        await resolver.resolve("flaky.test")
        dns.answers.clear()  # the name server goes away
        clock.now += 120  # past DNS_CACHE_TTL, within DNS_CACHE_STALE_MAX
        stale = await resolver.resolve("flaky.test")
        clock.now += 1000  # past the stale cap too
        resolver._local.clear()
        with pytest.raises(DNSLookupError):
            await resolver.resolve("flaky.test")
        return stale

    assert run(go()) == "93.184.216.30"


def test_failures_are_cached_for_the_negative_ttl(resolvers) -> None:
    clock = Clock()
    dns = ScriptedDns({})
    resolver = resolvers(dns, clock)

    async def go() -> str:
        for _ in range(3):
            with pytest.raises(DNSLookupError):
                await resolver.resolve("missing.test")
        assert dns.asked == ["missing.test"]
        clock.now += 11
        dns.answers["missing.test"] = "93.184.216.40"
        return await resolver.resolve("missing.test")

    assert run(go()) == "93.184.216.40"


@pytest.mark.parametrize(
    ("ip", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link_local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::1", "loopback"),
        ("fe80::1", "link_local"),
        ("fc00::1", "private"),
        ("::ffff:10.0.0.1", "private"),
        ("100.64.0.1", "reserved"),
        ("240.0.0.1", "private"),  # Python lists 240/4 as private before reserved
    ],
)
def test_address_policy_refuses_non_public_addresses(resolvers, ip: str, reason: str) -> None:
    resolver = resolvers(ScriptedDns({"inside.test": ip}), Clock())
    with pytest.raises(AddressRefused) as refused:
        run(resolver.resolve("inside.test"))
    assert refused.value.reason == reason


def test_allowed_networks_open_a_hole_in_the_policy(resolvers) -> None:
    policy = AddressPolicy(parse_networks("127.0.10.0/24, fd00::/8"))
    assert policy.refusal("127.0.10.5") is None
    assert policy.refusal("fd12::1") is None
    assert policy.refusal("127.0.0.1") == "loopback"
    assert policy.refusal("8.8.8.8") is None
    with pytest.raises(ValueError, match="DNS_ALLOWED_NETWORKS"):
        parse_networks("not-a-network")
