"""Closed patterns reach every worker at its next lease (util.lua counters' closed_seen,
admission/blocklist.py), on a real Redis: a second worker sees the first one's closing in
its own next reply and re-reads the closed set, not only at its timed read."""

from __future__ import annotations

import redis.asyncio as aioredis
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from extensions.admission.blocklist import BlocklistRefresh
from tests.unit.admission.golden_admission import admission
from tests.unit.frontier.test_traps import HOST, MakeFrontier, fetch_all, item, make, run

__all__ = ["make"]  # the fixture, imported for pytest


def test_another_workers_closing_shows_in_every_reply_and_stales_the_closed_set(
    make: MakeFrontier, redis_url: str
) -> None:
    """closed_seen (util.lua counters): each shard's count of closed-set changes rides on
    every reply, so a worker re-reads the set at its next lease, not its timed read."""

    async def go() -> tuple[bool, bool, frozenset[str]]:
        one, two = make(min_pages=3), make(min_pages=3)
        stats = MemoryStatsCollector(get_crawler())
        adm = admission()
        client = aioredis.Redis.from_url(redis_url)
        refresh = BlocklistRefresh(
            redis=client,
            key=two.keys.key("blocklist"),
            admission=adm,
            stats=stats,
            clock=lambda: 0.0,
            refresh_s=3600.0,  # no timed read within the test
            closed_keys=[two.keys.key("closed_patterns")],
            noise_key=two.keys.key("noise"),
        )
        await refresh.refresh()
        refresh.saw((await two.lease(0)).extra.get("closed_seen"))
        await one.admit([item(f"http://{HOST}/s?sid={n}") for n in range(4)])
        await fetch_all(one, "duplicate")  # worker one closes /s?sid
        refresh.saw((await two.lease(0)).extra.get("closed_seen"))
        stale = refresh.stale
        await refresh.refresh_if_due()
        await client.aclose()
        return stale, refresh.stale, adm.closed_patterns

    stale, after, closed = run(go())
    assert stale and not after
    assert f"{HOST}/s?sid" in closed
