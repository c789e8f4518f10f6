"""FrontierScheduler on a real Redis and a virtual clock, with the engine played here.

The engine part is what the scheduler uses of Scrapy's: the slot it wakes and whose
remove_request it hooks, the downloader's active set, download_async (robots.txt)
and close_spider_async. Everything else is the production code.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.http import TextResponse
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.test import get_crawler, get_reactor_settings

from extensions.frontier.scheduler import FrontierScheduler
from extensions.frontier.session import FrontierSession
from tests.project_settings import project_settings


class VirtualClock:
    """Epoch seconds that move only when a test says so. Far from the real time, so
    code that reads time.time() instead of its clock is caught; robots.txt tests start
    it at the real time, as the robots gate stamps verdicts with its own clock."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class Slot:
    def __init__(self) -> None:
        self.wakes = 0
        self.nextcall = self
        self.removed: list[Request] = []

    def schedule(self) -> None:  # nextcall.schedule(): the engine is woken
        self.wakes += 1

    def remove_request(self, request: Request) -> None:
        self.removed.append(request)


class Downloader:
    def __init__(self) -> None:
        self.active: set[Request] = set()


class Engine:
    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self._slot = Slot()
        self.downloader = Downloader()
        self.closed: list[str] = []
        self.downloads: list[Request] = []
        # url -> (status, body) or (status, body, headers)
        self.pages: dict[str, tuple[Any, ...]] = {}

    async def download_async(self, request: Request) -> TextResponse:
        self.downloads.append(request)
        status, body, *headers = self.pages.get(request.url, (404, ""))
        return TextResponse(
            request.url,
            status=status,
            body=body,
            headers=headers[0] if headers else None,
            encoding="utf-8",
        )

    async def close_spider_async(self, reason: str) -> None:
        self.closed.append(reason)


class UnitSpider(Spider):
    name = "unit"

    def parse_sitemap(self, response: Any) -> None:  # robots.txt Sitemap: lines go here
        pass


def settings_for(redis_url: str, data_dir: Path, **values: Any) -> dict[str, Any]:
    base = {
        "REDIS_URL": redis_url,
        "CRAWL_DATA_DIR": str(data_dir),
        "RECRAWL_ENABLED": False,
        "ROBOTS_ENABLED": False,
        "FRONTIER_DELAY": 5.0,
        "FRONTIER_POLL_INTERVAL": 60.0,
        "CONCURRENT_REQUESTS": 4,
        "DNS_ALLOWED_NETWORKS": ["127.0.0.0/8"],  # loopback is refused by default
    }
    # No reactor here: the scheduler needs only the running asyncio loop.
    return {**project_settings({**base, **values}).copy_to_dict(), **get_reactor_settings()}


async def open_scheduler(
    settings: dict[str, Any], clock: VirtualClock
) -> tuple[FrontierScheduler, Engine, UnitSpider]:
    crawler = get_crawler(UnitSpider, settings)
    engine = Engine(crawler)
    crawler.engine = engine  # type: ignore[assignment]
    spider = UnitSpider()
    scheduler = FrontierScheduler(crawler, clock=clock)
    await maybe_deferred_to_future(scheduler.open(spider))
    await settle(scheduler.session)
    return scheduler, engine, spider


async def close(scheduler: FrontierScheduler, reason: str = "finished") -> None:
    await maybe_deferred_to_future(scheduler.close(reason))


async def settle(session: FrontierSession) -> None:
    """Wait until no lease, flush, DNS resolution or robots.txt fetch is in flight."""
    for _ in range(200):
        await asyncio.sleep(0)
        tasks = [
            t
            for t in (session.leasing.leasing, session.batches.flushing)
            if t is not None and not t.done()
        ] + list(session.dispatch.robots_fetches.values())
        if not tasks and not session.parked.resolving:
            await asyncio.sleep(0)
            if session.leasing.leasing is None and session.batches.flushing is None:
                return
        await asyncio.sleep(0.005)
    raise AssertionError("scheduler did not settle")


async def until(check: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.005)


async def lease_now(scheduler: FrontierScheduler) -> list[Request]:
    """What the engine would get by asking now: one lease round trip, then the buffer.
    The flushes in flight land first: the engine asks after their wake-up (a lease
    that found nothing is not asked again until a reply or its wake time)."""
    await settle(scheduler.session)
    scheduler.session.leasing.kick()
    await settle(scheduler.session)
    handed = []
    while (request := scheduler.next_request()) is not None:
        handed.append(request)
    await settle(scheduler.session)
    return handed
