"""FrontierAdmin on real Redis: one shard, four shards on one server, and a three-master
Redis Cluster (auto shards). Each write is checked by what the frontier's own Lua
scripts then do (lease, report), not by reading back the key it wrote."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from twisted.internet.error import DNSLookupError

from extensions.admission.records import AdmitItem
from extensions.dns.cache import DnsSettings, HostResolver
from extensions.dns.lookup import Answer
from extensions.dns.policy import AddressPolicy
from extensions.frontier.admin import ALL, FrontierAdmin, UnknownHost
from extensions.frontier.core import DownloadEvent, Frontier, FrontierReply
from extensions.frontier.sharded import ShardedFrontier, crawl_keys
from extensions.robots.verdicts import RobotsVerdict
from extensions.state.connection import AnyAsyncRedis, async_twin, connect_url, map_slots
from tests.project_settings import project_frontier_config

CONFIG = project_frontier_config(delay=1.0, lease_ttl=60)
IPS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
PINNED = {"a.test": "10.0.0.1"}


# Entry time ("t") of item n of IPS[i]: the oldest queue head is the lowest n left.
T0 = 1_000_000


def host_of_ip(ip: str) -> str:
    return "a.test" if ip == IPS[0] else f"h{ip}"


def item(ip: str, n: int) -> AdmitItem:
    url = f"http://{host_of_ip(ip)}/{n}"
    entered = T0 + n + 10 * IPS.index(ip)
    return AdmitItem(url, ip, host_of_ip(ip), 1, f'{{"u":"{url}","t":{entered}}}')


@pytest.fixture(params=["one-shard", "four-shards", "cluster"])
def admin(request: pytest.FixtureRequest) -> Iterator[FrontierAdmin]:
    """An admin on an empty crawl "adm" (PINNED as its DNS_HOSTS_MAP)."""
    if request.param == "cluster":
        url = request.getfixturevalue("cluster").url
    else:
        request.getfixturevalue("redis_client")  # flushed
        url = request.getfixturevalue("redis_url")
    client = connect_url(url)
    configured = {"one-shard": 1, "four-shards": 4, "cluster": 0}[request.param]
    keys = crawl_keys(client, "adm", configured)
    yield FrontierAdmin(client, keys, PINNED.get)
    client.close()


def lease(admin: FrontierAdmin, n: int = 10, at: float | None = None) -> FrontierReply:
    return asyncio.run(_frontier_call(admin, "lease", n, at))


def report(admin: FrontierAdmin, events: list[DownloadEvent]) -> FrontierReply:
    return asyncio.run(_frontier_call(admin, "report", events, None))


async def twin(admin: FrontierAdmin) -> AnyAsyncRedis:
    """An async client on the admin's server or cluster, as a worker has."""
    return await map_slots(async_twin(admin.client))


async def _frontier_call(admin: FrontierAdmin, verb: str, arg: object, at: float | None) -> Any:
    client = await twin(admin)
    clock = (lambda: at) if at is not None else time.time
    frontier: Any = (
        Frontier(client, admin.keys.shard(0), CONFIG, clock)  # type: ignore[arg-type]
        if admin.keys.count == 1
        else ShardedFrontier(client, admin.keys, CONFIG, clock)  # type: ignore[arg-type]
    )
    try:
        return await getattr(frontier, verb)(arg)
    finally:
        await client.aclose()


def leased_ips(reply: FrontierReply) -> list[str]:
    return sorted(lease_id.rsplit("#", 1)[0] for lease_id, _ in reply.leases)


def test_admit_queues_once_and_counts_duplicates(admin: FrontierAdmin) -> None:
    items = [item(ip, n) for ip in IPS for n in range(2)]
    first = admin.admit(items, CONFIG)
    assert (first.admitted, first.duplicate, first.queued) == (6, 0, 6)
    again = admin.admit(items[:2], CONFIG)
    assert (again.admitted, again.duplicate, again.queued) == (0, 2, 6)
    assert admin.admit([], CONFIG).admitted == 0


def test_a_large_admission_goes_in_chunks_and_counts_every_one(
    admin: FrontierAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 100,000-line seeds file in one admit script held Redis past its busy limit,
    and the retried call counted every URL as already seen."""
    calls: list[int] = []
    original = Frontier.admit

    async def counting(self: Frontier, items: Any) -> FrontierReply:
        calls.append(len(items))
        return await original(self, items)

    monkeypatch.setattr("extensions.frontier.admin.ADMIT_CHUNK", 7)
    monkeypatch.setattr(Frontier, "admit", counting)
    items = [item(ip, n) for ip in IPS for n in range(6)]
    admitted = admin.admit(items, CONFIG)
    assert (admitted.admitted, admitted.duplicate, admitted.queued) == (18, 0, 18)
    again = admin.admit(items, CONFIG)
    assert (again.admitted, again.duplicate) == (0, 18)
    assert max(calls) <= 7


def test_pausing_the_crawl_stops_every_shard_until_resumed(admin: FrontierAdmin) -> None:
    admin.admit([item(ip, 0) for ip in IPS], CONFIG)
    assert admin.set_active(ALL, False).changed == admin.keys.count  # one switch per shard
    assert admin.set_active(ALL, False).changed == 0  # already paused
    assert lease(admin).leases == []
    assert admin.stats(CONFIG, time.time()).paused is True
    assert admin.set_active(ALL, True).changed == admin.keys.count
    assert admin.set_active(ALL, True).changed == 0  # `scrapy resume` says: not paused
    assert leased_ips(lease(admin)) == IPS


def test_pausing_a_host_pauses_its_ip_only(admin: FrontierAdmin) -> None:
    admin.admit([item(ip, 0) for ip in IPS], CONFIG)
    paused = admin.set_active("A.test.", False)  # a host name stands for its pinned IP
    assert (paused.ip, paused.changed) == ("10.0.0.1", 1)
    assert leased_ips(lease(admin)) == IPS[1:]
    stats = admin.stats(CONFIG, time.time())
    assert (stats.paused, stats.paused_ips) == (False, {"10.0.0.1": "A.test."})
    assert admin.ip_state("10.0.0.1", CONFIG.lanes).paused is True
    assert admin.set_active("10.0.0.1", True).changed == 1
    assert admin.set_active("10.0.0.1", True).changed == 0
    assert leased_ips(lease(admin, at=time.time() + 2)) == IPS[:1]


def test_resuming_an_ip_takes_it_back_when_it_was_given_up_as_down(admin: FrontierAdmin) -> None:
    state = admin.keys.for_ip(IPS[0]).ip_state(IPS[0])
    admin.client.hset(state, mapping={"down": 1.0, "failing_since": 0.5})  # outcome.lua's
    assert admin.ip_state(IPS[0], CONFIG.lanes).down_since == 1.0  # scrapy status --host
    assert admin.set_active("A.test.", True).changed == 1
    assert admin.ip_state(IPS[0], CONFIG.lanes).down_since is None
    assert admin.client.hmget(state, ["down", "failing_since"]) == [None, None]
    assert admin.set_active(IPS[0], True).changed == 0


def test_a_delay_override_spaces_the_ips_next_fetch(admin: FrontierAdmin) -> None:
    admin.admit([item(IPS[1], n) for n in range(2)], CONFIG)
    assert admin.set_delay(IPS[1], 5.0).changed == 1
    assert admin.set_delay(IPS[1], 5.0).changed == 0
    assert admin.ip_state(IPS[1], CONFIG.lanes).delays == {"override": 5.0}
    now = time.time()
    ((lease_id, _),) = lease(admin, at=now).leases
    report(admin, [DownloadEvent("done", lease_id, now + 0.5, status=200)])
    report(admin, [DownloadEvent("ack", lease_id, now + 0.6)])  # the IP is held until then
    assert admin.ip_state(IPS[1], CONFIG.lanes).next_fetch_at == pytest.approx(now + 5.5)
    assert lease(admin, at=now + 5.0).leases == []  # CONFIG.delay alone would allow it
    assert admin.set_delay(IPS[1], None).changed == 1
    assert admin.set_delay(IPS[1], None).changed == 0
    assert admin.ip_state(IPS[1], CONFIG.lanes).delays == {}
    with pytest.raises(ValueError, match="> 0 seconds"):
        admin.set_delay(IPS[1], 0)


def test_block_until_moves_a_waiting_ip_and_never_shortens(admin: FrontierAdmin) -> None:
    admin.admit([item(IPS[2], 0)], CONFIG)
    now = time.time()
    assert admin.block_until(IPS[2], now + 100).changed == 1
    assert admin.block_until(IPS[2], now + 50).changed == 0  # a backoff is never cut short
    state = admin.ip_state(IPS[2], CONFIG.lanes)
    assert state.blocked_until == pytest.approx(now + 100)
    assert state.next_fetch_at == pytest.approx(now + 100)
    assert lease(admin, at=now + 99).leases == []
    assert leased_ips(lease(admin, at=now + 100)) == [IPS[2]]


def test_ip_of_reads_literals_pins_and_the_resolvers_shared_cache(admin: FrontierAdmin) -> None:
    assert admin.ip_of("[::1]") == "::1"
    assert admin.ip_of("a.test") == "10.0.0.1"
    asyncio.run(_resolve(admin, {"cached.test": "93.184.216.9"}, ["cached.test", "gone.test"]))
    assert admin.ip_of("Cached.Test") == "93.184.216.9"  # the record the resolver wrote
    with pytest.raises(UnknownHost, match=r"gone\.test has not been resolved"):
        admin.ip_of("gone.test")  # its record is a cached failure
    with pytest.raises(UnknownHost, match="pass its IP address instead"):
        admin.set_active("never.test", False)


async def _resolve(admin: FrontierAdmin, answers: dict[str, str], hosts: list[str]) -> None:
    async def lookup(host: str) -> Answer:
        if host not in answers:
            raise DNSLookupError(host)
        return Answer((answers[host],), 60.0)

    client = await twin(admin)
    settings = DnsSettings(
        hosts_map={},
        map_only=False,
        servers=(),
        ipv6=True,
        ttl_min=1.0,
        cache_ttl=60.0,
        stale_max=600.0,
        negative_ttl=10.0,
        timeout=5.0,
        policy=AddressPolicy(),
    )
    resolver = HostResolver(settings, client, admin.keys.crawl_keys.dns, system_lookup=lookup)
    try:
        for host in hosts:
            with contextlib.suppress(DNSLookupError):  # a failure is cached too
                await resolver.resolve(host)
    finally:
        await client.aclose()


def test_block_rules_are_checked_added_and_removed_as_given(admin: FrontierAdmin) -> None:
    assert admin.block(["host:a.test", "re:/private/"]).changed == 2
    assert admin.block(["host:a.test"]).changed == 0
    with pytest.raises(ValueError, match="re:\\("):
        admin.block(["*.b.test/*", "re:("])
    assert admin.block_rules() == ["host:a.test", "re:/private/"]  # nothing of the bad call
    assert admin.unblock(["re:/private/", "host:never.test"]).changed == 1
    assert (admin.block_rules(), admin.block_rule_count()) == (["host:a.test"], 1)
    assert admin.stats(CONFIG, time.time()).blocklist_rules == 1


def test_stats_size_in_process_completed(admin: FrontierAdmin) -> None:
    admin.admit([item(ip, n) for ip in IPS for n in range(3)], CONFIG)
    admin.admit([AdmitItem("u", "", "parked.test", 0, '{"u":"http://parked.test/"}')], CONFIG)
    now = time.time()
    leases = lease(admin, at=now).leases
    host = host_of_ip(leases[0][0].rsplit("#", 1)[0])
    report(admin, [DownloadEvent("done", leases[0][0], now, status=200, host=host)])
    report(admin, [DownloadEvent("ack", leases[0][0], now)])
    stats = admin.stats(CONFIG, now + 0.5)
    assert (stats.size, stats.in_process, stats.completed) == (7, 2, 1)  # 7: the parked URL too
    assert sum(stats.front_queues) == 0 and stats.ips_with_back_queue == 3
    assert (stats.ips_ready, stats.ips_waiting) == (0, 1)  # the acked IP waits its delay
    assert stats.hosts_waiting_for_dns == 1
    assert stats.oldest_queued_at == T0 + 1  # item 0 of every IP is leased
    assert stats.counters["acked"] == 1 and admin.counters() == stats.counters
    counts = admin.host_counts(host)
    assert counts == {"fetched": 1, "status_2xx": 1, "last_fetch": pytest.approx(now)}


def test_robots_verdicts_of_a_hosts_origins(admin: FrontierAdmin) -> None:
    verdict = RobotsVerdict(
        kind="allow_all",
        body="",
        crawl_delay=2.0,
        sitemaps=(),
        fetched_at=1.0,
        expires_at=99.0,
        status=404,
    )
    for origin in ("http://a.test", "https://a.test:8443", "http://b.test"):
        admin.client.set(admin.keys.crawl_keys.robots(origin), verdict.to_json())
    assert admin.robots("a.test") == {"http://a.test": verdict, "https://a.test:8443": verdict}
    assert admin.robots("c.test") == {}


def test_mark_due_makes_matching_stored_urls_due_unless_claimed(admin: FrontierAdmin) -> None:
    keys, now = admin.keys.crawl_keys, time.time()
    urls = {"f1": "http://a.test/1", "f2": "http://a.test/2", "f3": "http://a.test/3"}
    for fp, url in {**urls, "f4": "http://b.test/"}.items():
        admin.client.set(keys.page_of(fp).doc(fp), f'{{"u":"{url}"}}')
        admin.client.zadd(keys.page_of(fp).recrawl_due, {fp: now + 3600})
    admin.client.zadd(keys.page_of("f2").recrawl_due, {"f2": now - 1})  # due already
    admin.client.hset(keys.page_of("f3").recrawl_claims, "f3", now + 60)  # being re-fetched
    marked = admin.mark_due(lambda url: url.startswith("http://a.test/"), now)
    assert (marked.stored, marked.matched) == (4, 3)
    assert (marked.made_due, marked.already_due, marked.claimed) == (1, 1, 1)
    assert admin.recrawl_stats(now).due_now == 2 and admin.recrawl_stats(now).stored_urls == 4
