"""lua/lease_ip.lua on a real Redis with a virtual clock: an IP is leased outside its
queues (a robots.txt redirect hop to its host) only when it is due and has no fetch in
flight, is charged as lease.lua charges it, and its queued pages wait the delay after
that fetch (DESIGN invariants 1 and 2)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
import redis.asyncio as aioredis

from extensions.admission.records import AdmitItem
from extensions.frontier.core import DownloadEvent, Frontier
from extensions.frontier.sharded import ShardedFrontier
from extensions.state.keys import FrontierKeys, ShardedKeys
from tests.project_settings import project_frontier_config

T = TypeVar("T")
IP = "10.9.0.7"
DELAY_S = 2.0
FETCH_S = 0.3


class VirtualClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def config(**fields: Any) -> Any:
    defaults = {"delay": DELAY_S, "lease_ttl": 60.0, "adaptive_factor": 0.0}
    return project_frontier_config(**{**defaults, **fields})


def on_frontier(
    redis_url: str, go: Callable[[Frontier, VirtualClock], Awaitable[T]], **fields: Any
) -> T:
    async def run() -> T:
        client = aioredis.Redis.from_url(redis_url)
        clock = VirtualClock()
        try:
            return await go(Frontier(client, FrontierKeys("hop"), config(**fields), clock), clock)
        finally:
            await client.aclose()

    return asyncio.run(run())


async def state(frontier: Frontier, ip: str = IP) -> dict[str, str]:
    raw = await frontier.redis.hgetall(frontier.keys.ip_state(ip))
    return {k.decode(): v.decode() for k, v in raw.items()}


async def done_and_ack(
    frontier: Frontier | ShardedFrontier, lease_id: str, at: float, **outcome: Any
) -> None:
    done = DownloadEvent("done", lease_id, at, **outcome)
    await frontier.report([done, DownloadEvent("ack", lease_id, at)])


def test_an_ip_the_frontier_never_saw_is_leased_at_once_and_charged(
    redis_url: str, redis_client: Any
) -> None:
    async def go(frontier: Frontier, clock: VirtualClock) -> tuple[Any, ...]:
        first = await frontier.lease_ip(IP, clock.now)
        charged = await state(frontier)
        again = await frontier.lease_ip(IP, clock.now + 60)  # its fetch is in flight
        end = clock.now + FETCH_S
        await done_and_ack(frontier, first.lease_id, end, status=200)
        clock.now = end + DELAY_S - 0.01
        early = await frontier.lease_ip(IP, clock.now)  # not due, and no later start taken
        clock.now = end + DELAY_S
        due = await frontier.lease_ip(IP, clock.now)
        leases = await frontier.redis.zcard(frontier.keys.key("leases"))
        return first, charged, again, end, early, due, leases, await state(frontier)

    first, charged, again, end, early, due, leases, after = on_frontier(redis_url, go)
    assert first.lease_id.startswith(f"{IP}#") and first.at == 1_000_000.0
    assert (charged["inflight"], float(charged["last_start"])) == ("1", 1_000_000.0)
    # In flight: asked again at now + the delay (the fetch ends no earlier than now).
    assert again == ("", pytest.approx(1_000_000.0 + DELAY_S))
    # Due = the delay after the hop's end, which 'done' charged.
    assert early == ("", pytest.approx(end + DELAY_S))
    assert due.lease_id and due.lease_id != first.lease_id
    assert leases == 1  # the first was acked; the second is held
    assert float(after["last_end"]) == pytest.approx(end)


def test_a_hop_leased_ahead_holds_the_ip_from_its_due_time_and_pages_follow_it(
    redis_url: str, redis_client: Any
) -> None:
    async def go(frontier: Frontier, clock: VirtualClock) -> tuple[Any, ...]:
        items = [
            AdmitItem(f"k{n}", IP, "b.test", 2, f'{{"u":"http://b.test/{n}"}}') for n in (1, 2)
        ]
        await frontier.admit(items)
        [(page, _)] = (await frontier.lease(1)).leases
        refused = await frontier.lease_ip(IP, clock.now + 60)  # a page is in flight
        page_end = clock.now + FETCH_S
        await done_and_ack(frontier, page, page_end)
        clock.now = page_end + 0.1
        hop = await frontier.lease_ip(IP, clock.now + 60)  # not due yet: taken ahead
        hop_state = await state(frontier)
        clock.now = page_end + DELAY_S
        overtaken = (await frontier.lease(1)).leases  # the page's own queue comes due
        hop_end = hop.at + FETCH_S
        await done_and_ack(frontier, hop.lease_id, hop_end, status=200)
        clock.now = hop_end + DELAY_S - 0.01
        early = (await frontier.lease(1)).leases
        clock.now = hop_end + DELAY_S
        due = (await frontier.lease(1)).leases
        stats = await frontier.stats()
        return refused, page_end, hop, hop_state, overtaken, early, due, stats

    refused, page_end, hop, hop_state, overtaken, early, due, stats = on_frontier(redis_url, go)
    assert refused.lease_id == ""
    # Its start is the IP's due time, the delay after the page, and is charged as such.
    assert hop.lease_id and hop.at == pytest.approx(page_end + DELAY_S)
    assert float(hop_state["last_start"]) == pytest.approx(page_end + DELAY_S)
    assert overtaken == [] and early == []  # the hop holds the IP, then its delay runs
    assert [record for _, record in due] == ['{"u":"http://b.test/2"}']
    assert stats["hop_leased"] == 1
    assert stats["queued"] == 0  # the hop took nothing from the queues


def test_a_backoff_crawl_delay_or_pause_makes_the_hop_wait(
    redis_url: str, redis_client: Any
) -> None:
    async def go(frontier: Frontier, clock: VirtualClock) -> list[Any]:
        key, now = frontier.keys.ip_state(IP), clock.now
        answers = []
        await frontier.redis.hset(key, mapping={"last_end": now - 1, "crawl_delay": 5})
        answers.append(await frontier.lease_ip(IP, now + 3))
        await frontier.redis.hset(key, mapping={"crawl_delay": 0, "blocked_until": now + 30})
        answers.append(await frontier.lease_ip(IP, now + 29))
        await frontier.redis.hdel(key, "blocked_until")
        await frontier.redis.hset(frontier.keys.key("paused_ips"), IP, "b.test")
        answers.append(await frontier.lease_ip(IP, now + 60))
        answers.append(await frontier.lease_ip(f"{IP}@c.test", now + 60))  # a key on that IP
        await frontier.redis.hdel(frontier.keys.key("paused_ips"), IP)
        await frontier.redis.hset(key, "blocked_until", now + 30)
        answers.append(await frontier.lease_ip(IP, now + 30))  # the backoff's end accepted
        return answers

    by_delay, by_backoff, paused, paused_host, after_backoff = on_frontier(redis_url, go)
    now = 1_000_000.0
    assert by_delay == ("", pytest.approx(now - 1 + 5))  # Crawl-delay 5 from the last end
    assert by_backoff == ("", pytest.approx(now + 30))
    assert paused == ("", pytest.approx(now + 1)) and paused_host == paused
    assert after_backoff.lease_id and after_backoff.at == pytest.approx(now + 30)


def test_a_hop_lease_its_worker_never_reports_expires_charged_and_requeues_nothing(
    redis_url: str, redis_client: Any
) -> None:
    async def go(frontier: Frontier, clock: VirtualClock) -> tuple[Any, ...]:
        hop = await frontier.lease_ip(IP, clock.now)
        clock.now += 61.0  # past FRONTIER_LEASE_TTL: the worker died mid-fetch
        reply = await frontier.lease(1)
        return hop, reply, await state(frontier), await frontier.stats()

    hop, reply, after, stats = on_frontier(redis_url, go, lease_ttl=60.0)
    assert hop.lease_id and reply.leases == [] and reply.leased == 0
    assert after["inflight"] == "0"
    assert float(after["last_end"]) == pytest.approx(1_000_000.0 + 61.0)  # charged
    assert stats["lease_expired"] == 1 and stats.get("queued", 0) == 0


def test_a_sharded_frontier_leases_the_ip_in_its_own_shard(
    redis_url: str, redis_client: Any
) -> None:
    async def go() -> tuple[Any, ...]:
        client = aioredis.Redis.from_url(redis_url)
        keys = ShardedKeys("hops", 4)
        frontier = ShardedFrontier(client, keys, config(), VirtualClock())
        try:
            hop = await frontier.lease_ip(IP, 1_000_000.0)
            home = keys.index_of(IP)
            states = [await client.hget(keys.shard(i).ip_state(IP), "inflight") for i in range(4)]
            await done_and_ack(frontier, hop.lease_id, 1_000_000.5, status=200)  # routed home
            after = await client.hget(keys.shard(home).ip_state(IP), "inflight")
            return home, states, after
        finally:
            await client.aclose()

    home, states, after = asyncio.run(go())
    assert [s is not None for s in states] == [i == home for i in range(4)]
    assert after == b"0"


def test_a_lost_lease_ip_reply_frees_the_ip_uncharged(redis_url: str, redis_client: Any) -> None:
    """Its id carries the call's token, as lease.lua's (Frontier.lost): the next call
    gives it back, and the IP is leased again at once."""

    async def go(frontier: Frontier, clock: VirtualClock) -> tuple[Any, ...]:
        first = await frontier.lease_ip(IP, clock.now)
        frontier.lost(first.lease_id.rpartition(":")[2])  # its reply never came
        again = await frontier.lease_ip(IP, clock.now)
        return first, again, await frontier.stats()

    first, again, stats = on_frontier(redis_url, go)
    assert first.lease_id and again.lease_id and again.lease_id != first.lease_id
    assert again.at == first.at  # not charged: due at once again
    assert stats["lost_leases_given_back"] == 1
