"""outcome.lua's arithmetic on a real Redis with a virtual clock: the failure backoff
(doubling, jitter, cap, reset), quarantine doubling, AIMD on 429/503 and the moving
average behind the adaptive delay (issue 13).

Each test drives one IP through a sequence of fetch outcomes and reads the wait the
frontier imposes after each: the ready heap's next_fetch_at minus the fetch's end.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from extensions.admission.records import AdmitItem
from extensions.frontier.config import frontier_config
from extensions.frontier.core import DownloadEvent, Frontier
from extensions.state.keys import FrontierKeys
from tests.project_settings import project_frontier_config, project_settings

FETCH_S = 0.2
DELAY_S = 1.0
OK = {"status": 200}
TIMEOUT = {"timeout": True}
REFUSED = {"failed": True}
TOO_MANY = {"status": 429}

Waits = Callable[..., list[float]]


class VirtualClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def _waits(frontier: Frontier, clock: VirtualClock, outcomes: list[dict[str, Any]]):
    ip = "10.9.0.1"
    items = [AdmitItem(f"k{n}", ip, "h", 2, f'{{"u":"http://h/{n}"}}') for n in range(99)]
    await frontier.admit(items)
    waits = []
    for outcome in outcomes:
        reply = await frontier.lease(1)
        assert len(reply.leases) == 1, reply
        lease_id = reply.leases[0][0]
        end = clock.now + FETCH_S
        done = DownloadEvent("done", lease_id, end, **outcome)
        await frontier.report([done, DownloadEvent("ack", lease_id, end)])
        due = (await frontier.lease(0)).next_due
        assert due is not None
        waits.append(due - end)
        clock.now = due
    return waits


@pytest.fixture
def waits(redis_url: str, redis_client: Any) -> Iterator[Waits]:
    """waits(outcomes, settings={NAME: value}, **config fields) -> the wait after each
    outcome, on a fresh crawl; settings are read as the crawl reads them (config.py)."""
    crawls = iter(range(1000))

    def run(
        outcomes: list[dict[str, Any]], settings: dict[str, Any] | None = None, **fields: Any
    ) -> list[float]:
        async def go() -> list[float]:
            client = aioredis.Redis.from_url(redis_url)
            defaults = {"delay": DELAY_S, "lease_ttl": 60, "adaptive_factor": 0.0}
            read = frontier_config(project_settings(settings))
            config = dataclasses.replace(read, **{**defaults, **fields})
            clock = VirtualClock()
            frontier = Frontier(client, FrontierKeys(f"backoff{next(crawls)}"), config, clock)
            try:
                return await _waits(frontier, clock, outcomes)
            finally:
                await client.aclose()

        return asyncio.run(go())

    yield run


def test_failures_back_off_doubling_with_upward_jitter(waits: Waits) -> None:
    for _ in range(5):  # a fresh jitter seed per script call
        got = waits([TIMEOUT, REFUSED, {"status": 502}], failure_backoff_base=2.0)
        for n, wait in enumerate(got):
            assert 2.0 * 2**n <= wait <= 1.5 * 2.0 * 2**n, got


def test_the_backoff_is_capped(waits: Waits) -> None:
    got = waits([TIMEOUT] * 4, failure_backoff_base=2.0, backoff_max=5.0)
    assert 2.0 <= got[0] <= 3.0
    assert 4.0 <= got[1] <= 5.0
    assert got[2:] == [pytest.approx(5.0)] * 2


def test_a_success_resets_the_backoff_and_a_404_is_a_success(waits: Waits) -> None:
    got = waits([TIMEOUT, TIMEOUT, OK, TIMEOUT, TIMEOUT, {"status": 404}, TIMEOUT])
    base = project_frontier_config().failure_backoff_base
    assert got[2] == pytest.approx(DELAY_S)
    assert base <= got[3] <= 1.5 * base
    assert got[5] == pytest.approx(DELAY_S)
    assert base <= got[6] <= 1.5 * base


def test_quarantine_doubles_per_repeat_up_to_its_cap_and_a_success_resets_it(
    waits: Waits,
) -> None:
    names = ("FRONTIER_QUARANTINE_AFTER", "FRONTIER_QUARANTINE_S", "FRONTIER_QUARANTINE_MAX")
    settings = dict(zip(names, (2, 100.0, 350.0), strict=True))
    got = waits([TIMEOUT, TIMEOUT, TIMEOUT, REFUSED, OK, TIMEOUT, TIMEOUT], settings)
    # A failure right after a quarantine (no success between) quarantines again, doubled.
    assert got[1:4] == [pytest.approx(100.0), pytest.approx(200.0), pytest.approx(350.0)]
    assert got[4] == pytest.approx(DELAY_S)
    assert got[6] == pytest.approx(100.0)


def test_aimd_halves_the_rate_on_a_429_and_gives_it_back_step_by_step(waits: Waits) -> None:
    outcomes = [{"status": 429, "retry_after": 0.0}] + [OK] * 6
    got = waits(outcomes)
    # Rate 1/2 -> 0.6 -> 0.7 ... of full speed (FRONTIER_RATE_STEP 0.1): gaps delay / rate,
    # then the plain delay.
    expected = [DELAY_S / share for share in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0)]
    assert got == [pytest.approx(e) for e in expected]


def test_frontier_rate_step_sets_the_additive_increase(waits: Waits) -> None:
    outcomes = [{"status": 429, "retry_after": 0.0}] + [OK] * 4
    got = waits(outcomes, {"FRONTIER_RATE_STEP": 0.25})
    expected = [DELAY_S / share for share in (0.5, 0.75, 1.0, 1.0, 1.0)]
    assert got == [pytest.approx(e) for e in expected]
    # 1: a single success after a halving is back to full speed.
    got = waits(outcomes[:3], {"FRONTIER_RATE_STEP": 1})
    assert got == [pytest.approx(2 * DELAY_S), pytest.approx(DELAY_S), pytest.approx(DELAY_S)]


def test_repeated_503s_keep_halving_and_retry_after_still_wins(waits: Waits) -> None:
    outcomes = [{"status": 503, "retry_after": 0.0}, {"status": 503, "retry_after": 0.0}]
    assert waits(outcomes) == [pytest.approx(2 * DELAY_S), pytest.approx(4 * DELAY_S)]
    assert waits([{"status": 429, "retry_after": 30.0}]) == [pytest.approx(30.0)]


def test_a_429_without_retry_after_waits_its_doubling_backoff(waits: Waits) -> None:
    got = waits([TOO_MANY] * 3, delay=0.2, backoff_base=1.0, backoff_max=3.0)
    # The throttle (0.4, 0.8, 1.6 s) is shorter: the backoff sets each wait.
    assert 1.0 <= got[0] <= 1.5
    assert 2.0 <= got[1] <= 3.0
    assert got[2] == pytest.approx(3.0)


def test_the_throttle_is_capped_by_backoff_max(waits: Waits) -> None:
    outcomes = [{"status": 429, "retry_after": 0.0}] * 3
    got = waits(outcomes, backoff_max=3.0)
    assert got == [pytest.approx(2.0), pytest.approx(3.0), pytest.approx(3.0)]


def test_the_adaptive_delay_follows_a_moving_average_not_the_last_sample(
    waits: Waits,
) -> None:
    got = waits([{**OK, "latency": 2.0}, {**OK, "latency": 0.1}], adaptive_factor=2.0)
    assert got[0] == pytest.approx(4.0)
    # 2.0 + 0.3 x (0.1 - 2.0) = 1.43 s on average: 2.86 s, not 2 x 0.1 (the last sample).
    assert got[1] == pytest.approx(2 * (2.0 + 0.3 * (0.1 - 2.0)))
