"""The scheduler's collaborators one by one: blocklist refresh, parked hosts' DNS and
the Redis-error policy, on a real Redis and a virtual clock."""

from __future__ import annotations

import asyncio
from collections import Counter

from redis.exceptions import RedisError, ResponseError
from scrapy import Request

from extensions.frontier.background import Background
from tests.unit.frontier.scheduler_harness import (
    Engine,
    VirtualClock,
    close,
    lease_now,
    open_scheduler,
    settle,
)


def test_a_blocklist_refresh_drops_urls_queued_before_the_block(settings) -> None:
    async def go():
        clock = VirtualClock()
        scheduler, _, _ = await open_scheduler(settings(URL_BLOCKLIST_REFRESH=5.0), clock)
        for ip in ("127.0.0.1", "127.0.0.2"):
            scheduler.enqueue_request(Request(f"http://{ip}/page"))
        await settle(scheduler.session)
        blocklist = scheduler.session.blocklist
        await blocklist.redis.sadd(blocklist.key, "host:127.0.0.2")  # `scrapy block`
        clock.now += 4.9
        await blocklist.refresh_if_due()
        admission = scheduler.session.batches.admission
        before = admission.block_rules.match("http://127.0.0.2/other")
        clock.now += 0.1
        handed = await lease_now(scheduler)
        refused = scheduler.enqueue_request(Request("http://127.0.0.2/other"))
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        return before, handed, refused, stats

    before, handed, refused, stats = asyncio.run(go())
    assert before is None  # not read again before URL_BLOCKLIST_REFRESH passed
    assert [r.url for r in handed] == ["http://127.0.0.1/page"]
    assert stats["frontier/dropped/blocked"] == 1
    assert refused is False
    assert stats["frontier/rejected/blocked"] == 1


def test_a_parked_host_is_resolved_again_when_its_retry_comes_due(settings) -> None:
    async def go():
        clock = VirtualClock()
        values = {"DNS_HOSTS_MAP_ONLY": True, "FRONTIER_DNS_RETRY_DELAY": 5.0}
        scheduler, _, _ = await open_scheduler(settings(**values), clock)
        scheduler.enqueue_request(Request("http://unmapped.test/page"))
        await settle(scheduler.session)
        stats = scheduler.stats
        failed = [stats.get_value("frontier/dns/failed")]
        clock.now += 4.9
        await lease_now(scheduler)
        failed.append(stats.get_value("frontier/dns/failed"))
        clock.now += 0.1
        await lease_now(scheduler)
        failed.append(stats.get_value("frontier/dns/failed"))
        await close(scheduler)
        return failed

    # Failed at admission, not asked before FRONTIER_DNS_RETRY_DELAY, asked again then.
    assert asyncio.run(go()) == [1, 1, 2]


def test_a_refused_host_named_again_is_dropped_without_another_warning(settings, caplog) -> None:
    """A later admit batch can park a refused host's URLs again before the first drop:
    they are dropped too, with one warning and one refusal counted per host."""

    async def go():
        values = {
            "DNS_HOSTS_MAP": {"inside.test": "127.0.10.2"},
            "DNS_ALLOWED_NETWORKS": "10.0.0.0/8",
        }
        scheduler, _, _ = await open_scheduler(settings(**values), VirtualClock())
        parked = scheduler.session.parked
        for _ in range(2):
            parked.resolve_all(["inside.test"])
            await settle(scheduler.session)
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        return stats

    stats = asyncio.run(go())
    warnings = [r for r in caplog.records if "Dropping URLs of inside.test" in r.getMessage()]
    assert len(warnings) == 1
    assert stats["frontier/dns/refused/loopback"] == 1
    assert stats["frontier/dns/refused_again"] == 1


class Stats:
    def __init__(self) -> None:
        self.values: Counter[str] = Counter()

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] += count


async def failing(exc: Exception) -> None:
    raise exc


async def succeeding() -> None:
    pass


def test_redis_failures_in_a_row_close_the_crawl_and_discard_the_batch() -> None:
    async def go():
        engine, stats, cleared = Engine(None), Stats(), []
        background = Background(engine, stats, max_redis_failures=2)
        background.discard_on_close(lambda: cleared.append("batch"))
        await background.guarded(failing(RedisError("down")))
        await background.guarded(succeeding())  # resets the count
        await background.guarded(failing(RedisError("down")))
        open_after_reset = list(engine.closed)
        await background.guarded(failing(RedisError("down")))
        await asyncio.sleep(0)
        return open_after_reset, engine.closed, cleared, stats.values

    open_after_reset, closed, cleared, values = asyncio.run(go())
    assert open_after_reset == []
    assert closed == ["redis_unavailable"]
    assert cleared == ["batch"]
    assert values["frontier/redis_errors"] == 3


def test_a_script_error_closes_the_crawl_at_once() -> None:
    async def go():
        engine, stats = Engine(None), Stats()
        background = Background(engine, stats, max_redis_failures=10)
        await background.guarded(failing(ResponseError("bad script")))
        await asyncio.sleep(0)
        wakes = engine._slot.wakes
        background.wake_engine()  # a closing crawl is not woken
        return engine.closed, stats.values["frontier/script_errors"], engine._slot.wakes - wakes

    assert asyncio.run(go()) == (["frontier_error"], 1, 0)
