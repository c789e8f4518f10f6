"""An IP that stops answering for good is given up, so the crawl can end (outcome.lua
gone_down, lease.lua's down mark, records.DOWN_MARK), on a real Redis with a virtual clock.

Before, a host that died mid-crawl kept its queued URLs waiting through quarantines doubled
up to FRONTIER_QUARANTINE_MAX (6 h) and the crawl never ended. Now failures in a row, a
quarantine among them, for FRONTIER_DOWN_AFTER mark the IP down: its records leave marked,
at once rather than after a quarantine, and dispatch drops them unfetched.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from scrapy import Spider

from extensions.admission.records import DOWN_META, AdmitItem, decode_request, mark_recrawl
from extensions.frontier.config import frontier_config
from extensions.frontier.core import DownloadEvent, Frontier
from extensions.state.keys import FrontierKeys
from tests.project_settings import project_settings

IP = "10.9.0.7"
REFUSED = {"failed": True}
OK = {"status": 200}
# Quarantine after 2 failures in a row, 10 s first; down after 60 s of failing.
SETTINGS = {
    "FRONTIER_QUARANTINE_AFTER": 2,
    "FRONTIER_QUARANTINE_S": 10.0,
    "FRONTIER_QUARANTINE_MAX": 40.0,
    "FRONTIER_DOWN_AFTER": 60.0,
}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclasses.dataclass
class Run:
    """One IP with queued URLs, fetched outcome by outcome as fast as the frontier allows."""

    frontier: Frontier
    clock: Clock

    async def fetch(self, outcome: dict[str, Any]) -> None:
        """Lease the IP's next URL when it is due, and report `outcome` for it."""
        await self.wait_due()
        reply = await self.frontier.lease(1)
        assert len(reply.leases) == 1, reply
        lease_id, record = reply.leases[0]
        assert not decode_request(record, Spider("t")).meta.get(DOWN_META)
        end = self.clock.now + 0.1
        done = DownloadEvent("done", lease_id, end, **outcome)
        await self.frontier.report([done, DownloadEvent("ack", lease_id, end)])

    async def wait_due(self) -> float:
        """Move the clock to the IP's next_fetch_at; returns how far it moved."""
        due = (await self.frontier.lease(0)).next_due
        assert due is not None
        moved = max(0.0, due - self.clock.now)
        self.clock.now += moved
        return moved

    async def leased_marks(self, n: int) -> list[bool]:
        """Lease n URLs as they come due; whether each came marked down."""
        marks = []
        spider = Spider("t")
        for _ in range(n):
            await self.wait_due()
            (lease_id, record), *_ = (await self.frontier.lease(1)).leases
            marks.append(bool(decode_request(record, spider).meta.get(DOWN_META)))
            await self.frontier.report([DownloadEvent("ack", lease_id, self.clock.now)])
        return marks


Runner = Callable[..., Any]


@pytest.fixture
def run(redis_url: str, redis_client: Any) -> Iterator[Runner]:
    """run(steps, settings) -> steps(Run)'s result, on a fresh crawl of one IP with 20
    queued URLs (2 of them re-crawls)."""
    crawls = iter(range(1000))

    def go(steps: Callable[[Run], Any], settings: dict[str, Any] | None = None) -> Any:
        async def main() -> Any:
            client = aioredis.Redis.from_url(redis_url)
            read = frontier_config(project_settings({**SETTINGS, **(settings or {})}))
            config = dataclasses.replace(read, delay=1.0, lease_ttl=60, adaptive_factor=0.0)
            clock = Clock()
            keys = FrontierKeys(f"down{next(crawls)}")
            frontier = Frontier(client, keys, config, clock)
            records = [f'{{"u":"http://h.test/{n}"}}' for n in range(20)]
            items = [
                AdmitItem(f"k{n}", IP, "h.test", 2, mark_recrawl(rec, n >= 18))
                for n, rec in enumerate(records)
            ]
            await frontier.admit(items)
            try:
                return await steps(Run(frontier, clock))
            finally:
                await client.aclose()

        return asyncio.run(main())

    yield go


def test_failing_past_down_after_with_a_quarantine_gives_the_ip_up(run: Runner) -> None:
    async def steps(r: Run) -> tuple[float, list[bool]]:
        for _ in range(5):  # 2 in a row quarantine it (10 s, then 20, 40: > 60 s in all)
            await r.fetch(REFUSED)
        waited = await r.wait_due()  # down: due again at its delay, not after a quarantine
        return waited, await r.leased_marks(15)

    waited, marks = run(steps)
    assert waited == pytest.approx(0.1 + 1.0)  # the failed fetch's 0.1 s, then the delay
    assert marks == [True] * 15  # the re-crawls too (their own mark stays in front)


def test_a_streak_shorter_than_down_after_only_quarantines(run: Runner) -> None:
    async def steps(r: Run) -> list[bool]:
        for _ in range(3):  # quarantined once (10 s), then again: 10 + 20 s < 60 s
            await r.fetch(REFUSED)
        return await r.leased_marks(2)

    assert run(steps) == [False, False]


@pytest.mark.parametrize("answer", [{"status": 503}, OK])
def test_an_answer_in_between_starts_the_streak_again(run: Runner, answer: dict[str, Any]) -> None:
    # 4 failures span ~33 s, 2 more ~40 s (quarantines 10, 20, 40, 40): 73 s, were they in
    # a row (the first test: the fifth failure in a row gives the IP up).
    outcomes = [REFUSED] * 4 + [answer] + [REFUSED] * 2

    async def steps(r: Run) -> list[bool]:
        for outcome in outcomes:
            await r.fetch(outcome)  # a 503 is an answer too: the server is up
        return await r.leased_marks(2)

    assert run(steps) == [False, False]


def test_down_after_zero_never_gives_an_ip_up(run: Runner) -> None:
    async def steps(r: Run) -> list[bool]:
        for _ in range(6):
            await r.fetch(REFUSED)
        return await r.leased_marks(1)

    assert run(steps, {"FRONTIER_DOWN_AFTER": 0}) == [False]
