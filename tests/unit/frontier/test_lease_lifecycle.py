"""Leases over a fetch's life (virtual clock, real Redis): a dead worker's lease comes
back after FRONTIER_LEASE_TTL, an acked one never, and a fetched page holds its IP until
its ack (report.lua)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import TimeoutError as RedisTimeoutError

from extensions.frontier.core import DownloadEvent, FrontierReply
from extensions.frontier.sharded import ShardedFrontier
from extensions.state.keys import ShardedKeys
from tests.project_settings import project_frontier_config
from tests.unit.frontier.test_frontier_sim import (
    DELAY_S,
    FETCH_S,
    VirtualClock,
    finish,
    items,
    lease_one,
    run,
)


def test_expired_lease_is_redelivered_and_blocks_its_ip_until_then(make_frontier) -> None:
    async def go():
        frontier, clock = make_frontier()
        await frontier.admit(items(["10.3.0.4"], 2))
        dead = await lease_one(frontier)  # this worker dies: no done, no ack
        clock.now += 59.0
        blocked = await frontier.lease(5)
        clock.now += 1.0  # lease_ttl = 60: reclaimed now, the IP charged as if fetched
        charged = await frontier.lease(5)
        clock.now += DELAY_S
        again = await frontier.lease(5)
        assert charged.leases == []
        return dead, blocked, again

    dead, blocked, again = run(go())
    assert blocked.leases == []  # the IP is still in flight for everyone
    assert [r for _, r in again.leases] == ['{"u":"http://10.3.0.4/0"}']
    assert again.leases[0][0] != dead


def test_acked_lease_is_never_redelivered(make_frontier) -> None:
    async def go():
        frontier, clock = make_frontier()
        await frontier.admit(items(["10.3.0.5"], 1))
        lease_id = await lease_one(frontier)
        await finish(frontier, lease_id, clock.now + FETCH_S)
        clock.now += 1000.0
        return await frontier.lease(5), await frontier.stats()

    reply, stats = run(go())
    assert reply.leases == [] and reply.remaining == 0
    assert stats.get("lease_expired", 0) == 0


def test_done_but_unacked_page_is_redelivered_after_its_lease(make_frontier) -> None:
    # Fetched, then the worker died while parsing: its outlinks were never admitted.
    async def go():
        frontier, clock = make_frontier()
        await frontier.admit(items(["10.3.0.6"], 1))
        lease_id = await lease_one(frontier)
        await frontier.report([DownloadEvent("done", lease_id, clock.now + FETCH_S, 200)])
        clock.now += FETCH_S + 61.0
        return await frontier.lease(5)

    assert len(run(go()).leases) == 1


def test_a_fetched_page_holds_its_ip_until_its_ack(make_frontier) -> None:
    # Its outcome (trap feedback) and outlinks reach the frontier before the IP's next
    # fetch is leased; the delay still counts from the fetch's end.
    async def go():
        frontier, clock = make_frontier()
        await frontier.admit(items(["10.3.0.8"], 3))
        first = await lease_one(frontier)
        ended = clock.now + FETCH_S
        await frontier.report([DownloadEvent("done", first, ended, 200)])
        clock.now = ended + 2 * DELAY_S  # due by the delay, but still processing
        held = await frontier.lease(5)
        await frontier.report([DownloadEvent("ack", first, clock.now)])
        after_ack = await frontier.lease(5)
        second = after_ack.leases[0][0]
        ended = clock.now + FETCH_S
        await finish(frontier, second, ended)  # acked within the delay
        clock.now = ended + DELAY_S - 0.01
        early = await frontier.lease(5)
        clock.now = ended + DELAY_S
        return held, after_ack, early, await frontier.lease(5)

    held, after_ack, early, on_time = run(go())
    assert held.leases == [] and held.next_due is None  # off the ready heap while held
    assert len(after_ack.leases) == 1
    assert early.leases == [] and len(on_time.leases) == 1


def test_a_lease_dropped_before_the_download_does_not_space_the_next_fetch(
    make_frontier,
) -> None:
    # Dispatch drops a leased URL whose pattern closed (or robots forbids it) without a
    # byte sent: the IP's next fetch is due a delay after its last real fetch, not after
    # the dropped lease (which cost a whole delay per dropped URL: a trap web's closed
    # patterns made a host crawl at a third of its polite rate at FRONTIER_DELAY 0.25).
    async def go():
        frontier, clock = make_frontier()
        await frontier.admit(items(["10.3.0.9"], 4))
        first = await lease_one(frontier)
        ended = clock.now + FETCH_S
        await finish(frontier, first, ended)
        clock.now = ended + DELAY_S
        dropped = await lease_one(frontier)
        clock.now += 0.01
        await frontier.report([DownloadEvent("ack", dropped, clock.now)])  # never fetched
        right_after = await frontier.lease(5)
        fetched = right_after.leases[0][0]
        await frontier.report([DownloadEvent("done", fetched, clock.now + FETCH_S, 200)])
        clock.now += FETCH_S + 0.01
        await frontier.report([DownloadEvent("ack", fetched, clock.now)])
        return right_after, await frontier.lease(5)

    right_after, too_soon = run(go())
    assert len(right_after.leases) == 1  # due at once: the drop charged nothing
    assert too_soon.leases == []  # a real fetch still spaces the next by the delay


def test_a_lost_lease_call_gives_its_leases_back_uncharged(make_frontier) -> None:
    """A call whose reply was lost (Frontier.lost): its leases go back at the next lease
    call, and its IP is due at once (nothing was fetched). The integration test
    test_lost_lease_reply.py loses one to a stalled Redis."""

    async def go():
        frontier, _ = make_frontier()
        await frontier.admit(items(["10.3.0.9"], 1))
        lost = await frontier.lease(1)  # its reply never reaches the downloader
        frontier.lost(lost.call)
        again = await frontier.lease(1)
        return lost, again, await frontier.stats()

    lost, again, stats = run(go())
    assert [r for _, r in again.leases] == [r for _, r in lost.leases]
    assert again.leases[0][0].endswith(":" + again.call)  # ids carry their call
    assert stats["lost_leases_given_back"] == 1


def test_a_lost_call_run_after_its_first_give_back_is_given_back_at_the_second(
    make_frontier,
) -> None:
    """Redis may serve the give-back before the buffered call: a second give-back, after
    the first one's answer, comes after it."""

    async def go():
        frontier, _ = make_frontier()
        await frontier.admit(items(["10.3.0.10"], 1))
        frontier.lost("w.1")
        first = await frontier.lease(0)  # gives back nothing: the call has not run
        late = await frontier._run("lease", n=1, call="w.1")  # Redis runs it now
        again = await frontier.lease(1)
        return first, late, again

    first, late, again = run(go())
    assert first.leased == 0 and len(late.leases) == 1
    assert [r for _, r in again.leases] == [r for _, r in late.leases]


def test_other_calls_leases_stay(make_frontier) -> None:
    async def go():
        frontier, _ = make_frontier()
        await frontier.admit(items(["10.3.0.11", "10.3.0.12"], 1))
        held = await frontier.lease(1)
        frontier.lost("another.7")
        await frontier.lease(0)
        return held, await frontier.lease(5)

    held, after = run(go())
    assert len(held.leases) == 1 and after.leased == 2  # the held one and the other IP's


def test_a_sharded_lease_that_fails_in_one_shard_gives_the_others_back(
    redis_url: str, redis_client: Any
) -> None:
    """One shard's call fails: the other shards' leases reach no one (the error is what
    the caller gets), so they are lost calls too, given back at the next lease."""

    async def go() -> tuple[int, int]:
        client = aioredis.Redis.from_url(redis_url)
        keys = ShardedKeys("lost", 2)
        frontier = ShardedFrontier(client, keys, project_frontier_config(), VirtualClock())
        ips = [f"10.3.1.{n}" for n in range(1, 40)]
        on = {keys.index_of(ip): ip for ip in ips}  # one IP in each shard
        try:
            await frontier.admit(items(list(on.values()), 1))
            stalled = frontier.shards[1]

            async def times_out(n: int) -> FrontierReply:
                raise RedisTimeoutError("Timeout reading from socket")

            stalled.lease = times_out  # type: ignore[method-assign]
            with pytest.raises(RedisTimeoutError):
                await frontier.lease(2)
            del stalled.lease  # the class's again
            given = (await frontier.lease(0)).leased
            return given, len((await frontier.lease(2)).leases)
        finally:
            await client.aclose()

    held, leased = asyncio.run(go())
    assert held == 0  # shard 0's lease went back
    assert leased == 2
