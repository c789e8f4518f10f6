"""The resolver (extensions/dns/cache.py): pins, record TTLs within floor..cap, the shared
Redis cache and its expiry, stale answers, negative caching, the address policy and the
stats. Real Redis and a virtual clock; lookups are scripted, so no DNS server is asked
(tests/integration/test_dns_server.py asks a real one)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator

import pytest
import redis.asyncio as aioredis
from twisted.internet.error import DNSLookupError

from extensions.dns.cache import DnsSettings, HostResolver, decode_shared
from extensions.dns.lookup import Answer, LookupFailed
from extensions.dns.policy import AddressPolicy, AddressRefused, parse_networks
from extensions.state.keys import FrontierKeys

KEYS = FrontierKeys("dnstest")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Stats:
    def __init__(self) -> None:
        self.values: Counter[str] = Counter()

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] += count


class ScriptedDns:
    """Answers from a dict (host -> addresses, TTL); a missing name is an NXDOMAIN."""

    def __init__(self, answers: dict[str, tuple[tuple[str, ...], float | None]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, host: str) -> Answer:
        self.asked.append(host)
        if host not in self.answers:
            raise LookupFailed(host, "nxdomain")
        addresses, ttl = self.answers[host]
        return Answer(addresses, ttl)


def one(ip: str, ttl: float | None = 3600.0) -> tuple[tuple[str, ...], float | None]:
    return (ip,), ttl


def dns_settings(**overrides: object) -> DnsSettings:
    base = {
        "hosts_map": {"pinned.test": "93.184.216.7"},
        "map_only": False,
        "servers": (),
        "ipv6": True,
        "ttl_min": 10.0,
        "cache_ttl": 60.0,
        "stale_max": 600.0,
        "negative_ttl": 10.0,
        "timeout": 5.0,
        "policy": AddressPolicy(),
    }
    return DnsSettings(**{**base, **overrides})  # type: ignore[arg-type]


@pytest.fixture
def resolvers(redis_url: str, redis_client) -> Iterator:
    def make(dns: ScriptedDns, clock: Clock, stats: Stats | None = None, **overrides: object):
        client = aioredis.Redis.from_url(redis_url)
        settings = dns_settings(**overrides)
        return HostResolver(settings, client, KEYS.dns, stats, clock=clock, system_lookup=dns)

    yield make


def run(coro):
    return asyncio.run(coro)


def test_pins_and_literals_answer_without_lookup(resolvers) -> None:
    dns = ScriptedDns({})
    resolver = resolvers(dns, Clock())
    assert resolver.cached("pinned.test") == "93.184.216.7"
    assert run(resolver.resolve("203.0.114.9")) == "203.0.114.9"
    assert dns.asked == []


def test_one_workers_answer_serves_every_worker_until_its_expiry(resolvers) -> None:
    clock = Clock()
    dns_a, dns_b = ScriptedDns({"shared.test": one("93.184.216.20", 30)}), ScriptedDns({})
    stats_b = Stats()
    first, second = resolvers(dns_a, clock), resolvers(dns_b, clock, stats_b)

    async def go() -> tuple[str, str]:
        return await first.resolve("shared.test"), await second.resolve("shared.test")

    assert run(go()) == ("93.184.216.20", "93.184.216.20")
    assert (dns_a.asked, dns_b.asked) == (["shared.test"], [])
    assert stats_b.values["dns/cache/shared_hit"] == 1
    clock.now += 29.9  # the record's TTL (30 s) holds in both workers
    assert (first.cached("shared.test"), second.cached("shared.test")) == ("93.184.216.20",) * 2
    clock.now += 0.2
    assert (first.cached("shared.test"), second.cached("shared.test")) == (None, None)


@pytest.mark.parametrize(
    ("ttl", "fresh_for"),
    [(30.0, 30.0), (1.0, 10.0), (3600.0, 60.0), (None, 60.0)],
    ids=["record", "floor", "cap", "no-ttl-gets-the-cap"],
)
def test_an_answer_lives_its_ttl_within_floor_and_cap(
    resolvers, redis_client, ttl: float | None, fresh_for: float
) -> None:
    clock = Clock()
    dns = ScriptedDns({"ttl.test": one("93.184.216.21", ttl)})
    resolver = resolvers(dns, clock)
    run(resolver.resolve("ttl.test"))
    record = decode_shared(redis_client.get(KEYS.dns("ttl.test")))
    assert record.fresh_until == clock.now + fresh_for
    clock.now += fresh_for - 0.01
    assert resolver.cached("ttl.test") == "93.184.216.21"
    clock.now += 0.02
    assert resolver.cached("ttl.test") is None
    assert redis_client.ttl(KEYS.dns("ttl.test")) > 590  # kept for stale use (600 s)


def test_the_address_in_use_is_kept_while_the_answer_holds_it(resolvers) -> None:
    clock = Clock()
    dns = ScriptedDns({"multi.test": (("93.184.216.31", "93.184.216.32"), 10.0)})
    resolver = resolvers(dns, clock)

    async def go() -> list[str]:
        got = [await resolver.resolve("multi.test")]
        for answer in (("93.184.216.32", "93.184.216.31"), ("93.184.216.33",)):
            dns.answers["multi.test"] = (answer, 10.0)
            clock.now += 11
            got.append(await resolver.resolve("multi.test"))
        return got

    # A name server rotates the order: the charged address stays until it is gone.
    assert run(go()) == ["93.184.216.31", "93.184.216.31", "93.184.216.33"]


def test_an_address_a_connection_was_refused_at_is_avoided_while_another_answers(
    resolvers,
) -> None:
    clock, stats = Clock(), Stats()
    both = ("93.184.216.41", "93.184.216.42")
    dns = ScriptedDns({"twin.test": (both, 3600.0), "solo.test": one("93.184.216.43")})
    resolver, other_worker = resolvers(dns, clock, stats), resolvers(dns, clock)

    async def go() -> list[str]:
        got = [await resolver.resolve("twin.test"), await other_worker.resolve("twin.test")]
        assert not resolver.avoiding  # dispatch's fast path: nothing to move
        resolver.avoid("twin.test", both[0])  # refused there
        assert resolver.avoiding and not other_worker.avoiding
        got.append(resolver.cached("twin.test") or "asks again")
        got.append(await resolver.resolve("twin.test"))  # the shared answer is avoided too
        other_worker._local.clear()  # its own answer expired: it reads the shared one
        got.append(await other_worker.resolve("twin.test"))
        await resolver.resolve("solo.test")
        resolver.avoid("solo.test", "93.184.216.43")
        got.append(await resolver.resolve("solo.test"))  # no other address: the same
        resolver.avoid("pinned.test", "93.184.216.7")
        got.append(await resolver.resolve("pinned.test"))  # nothing to choose
        clock.now += 61  # DNS_CACHE_TTL later the name server's order counts again
        resolver._local.clear()
        got.append(await resolver.resolve("twin.test"))
        return got

    assert run(go()) == [
        *both[:1] * 2,
        "asks again",
        both[1],
        both[1],
        "93.184.216.43",
        "93.184.216.7",
        both[1],
    ]
    assert stats.values["dns/avoided"] == 2  # the pin is not counted


def test_stale_answer_is_used_when_reresolution_fails(resolvers) -> None:
    clock = Clock()
    dns = ScriptedDns({"flaky.test": one("93.184.216.30")})
    resolver = resolvers(dns, clock)

    async def go() -> str:
        await resolver.resolve("flaky.test")
        dns.answers.clear()  # the name server goes away
        clock.now += 120  # past the cap (60 s), within DNS_CACHE_STALE_MAX
        stale = await resolver.resolve("flaky.test")
        clock.now += 1000  # past the stale cap too
        resolver._local.clear()
        with pytest.raises(DNSLookupError):
            await resolver.resolve("flaky.test")
        return stale

    assert run(go()) == "93.184.216.30"


def test_failures_are_cached_for_the_negative_ttl_and_counted_by_cause(resolvers) -> None:
    clock, stats = Clock(), Stats()
    dns = ScriptedDns({})
    resolver = resolvers(dns, clock, stats)

    async def go() -> str:
        for _ in range(3):
            with pytest.raises(LookupFailed, match="nxdomain"):
                await resolver.resolve("missing.test")
        assert dns.asked == ["missing.test"]
        clock.now += 9.9
        with pytest.raises(DNSLookupError):
            await resolver.resolve("missing.test")
        clock.now += 0.2
        dns.answers["missing.test"] = one("93.184.216.40")
        return await resolver.resolve("missing.test")

    assert run(go()) == "93.184.216.40"
    assert dns.asked == ["missing.test", "missing.test"]
    assert stats.values["dns/failed/nxdomain"] == stats.values["dns/failed"] == 1
    assert stats.values["dns/cache/negative_hit"] == 3
    assert stats.values["dns/lookups"] == 2


def test_a_worker_without_redis_remembers_failures_too() -> None:
    clock, dns = Clock(), ScriptedDns({})
    resolver = HostResolver(dns_settings(), clock=clock, system_lookup=dns)

    async def go() -> None:
        for _ in range(3):
            with pytest.raises(LookupFailed):
                await resolver.resolve("missing.test")
        clock.now += 10.1
        with pytest.raises(LookupFailed):
            await resolver.resolve("missing.test")

    run(go())
    assert dns.asked == ["missing.test", "missing.test"]


def test_hits_and_lookups_give_a_hit_ratio(resolvers) -> None:
    clock, stats = Clock(), Stats()
    resolver = resolvers(ScriptedDns({"hit.test": one("93.184.216.41")}), clock, stats)

    async def go() -> None:
        for _ in range(4):
            await resolver.resolve("hit.test")

    run(go())
    assert resolver.cached("hit.test") == "93.184.216.41"
    assert (stats.values["dns/lookups"], stats.values["dns/cache/local_hit"]) == (1, 4)


def test_a_refused_answer_is_refused_once_per_ttl_not_retried(resolvers) -> None:
    clock, stats = Clock(), Stats()
    dns = ScriptedDns({"inside.test": (("127.0.0.5", "127.0.0.6"), 30.0)})
    resolver = resolvers(dns, clock, stats)

    async def go() -> None:
        for _ in range(2):
            with pytest.raises(AddressRefused) as refused:
                await resolver.resolve("inside.test")
            assert refused.value.reason == "loopback"
        with pytest.raises(AddressRefused):
            resolver.cached("inside.test")  # admission rejects the host's next URLs

    run(go())
    assert dns.asked == ["inside.test"]
    assert stats.values["dns/refused/loopback"] == 1
    assert stats.values["dns/failed"] == 0


def test_an_allowed_address_is_chosen_over_a_refused_one(resolvers) -> None:
    dns = ScriptedDns({"mixed.test": (("10.0.0.1", "93.184.216.50"), 30.0)})
    assert run(resolvers(dns, Clock()).resolve("mixed.test")) == "93.184.216.50"


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
    resolver = resolvers(ScriptedDns({"inside.test": one(ip)}), Clock())
    with pytest.raises(AddressRefused) as refused:
        run(resolver.resolve("inside.test"))
    assert refused.value.reason == reason


def test_allowed_networks_open_a_hole_in_the_policy() -> None:
    policy = AddressPolicy(parse_networks("127.0.10.0/24, fd00::/8"))
    assert policy.refusal("127.0.10.5") is None
    assert policy.refusal("fd12::1") is None
    assert policy.refusal("127.0.0.1") == "loopback"
    assert policy.refusal("8.8.8.8") is None
    with pytest.raises(ValueError, match="DNS_ALLOWED_NETWORKS"):
        parse_networks("not-a-network")


def test_the_local_cache_keeps_its_newest_hosts_and_the_shared_one_the_rest(resolvers) -> None:
    clock, stats = Clock(), Stats()
    hosts = {f"h{i}.test": one(f"93.184.216.{i}") for i in range(10)}
    resolver = resolvers(ScriptedDns({**hosts}), clock, stats)
    resolver.local_hosts = 3
    failing = [f"gone{i}.test" for i in range(5)]

    async def go() -> str:
        for host in hosts:
            await resolver.resolve(host)
        for host in failing:
            with pytest.raises(LookupFailed):
                await resolver.resolve(host)
        return await resolver.resolve("h0.test")  # evicted here, still in Redis

    assert run(go()) == "93.184.216.0"
    assert len(resolver._local) == 3 and len(resolver._negative) == 3
    assert resolver.cached("h9.test") == "93.184.216.9"  # the newest stay
    assert resolver.cached("h6.test") is None and resolver.cached("h0.test") == "93.184.216.0"
    # Every host was looked up once: the evicted h0 came back from the shared cache.
    assert Counter(resolver.system_lookup.asked) == Counter([*hosts, *failing])
    assert stats.values["dns/cache/shared_hit"] == 1
    assert stats.values["dns/cache/local_evicted"] == (10 - 3) + (5 - 3) + 1
