"""A step that runs on its own Redis client every few seconds while the spider is open
(the metrics' crawl-wide reads, the shared stats' pushes).

Its own client: the scheduler closes its client before spider_closed. Stopped between
commands, never cancelled in one: redis-py (8.1) can swallow a CancelledError raised
inside a command, and the loop then ran on forever, so the crawl never exited (seen in
CI; reproduced with HGETALLs cancelled at random).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from extensions.state.connection import redis_lifecycle

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from extensions.state.connection import AnyAsyncRedis


class RedisTicker:
    """`step(client)` every `interval_s` from start() to stop(); with `final`, once more
    after the stop (a last push of what the interval had not sent yet)."""

    def __init__(
        self,
        crawler: Crawler,
        interval_s: float,
        step: Callable[[AnyAsyncRedis], Awaitable[None]],
        final: bool = False,
    ) -> None:
        self.crawler = crawler
        self.interval_s = interval_s
        self.step = step
        self.final = final
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_event_loop().create_task(self._loop())

    async def _loop(self) -> None:
        client = redis_lifecycle(self.crawler).async_client()
        try:
            while not self._stop.is_set():
                await self.step(client)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.interval_s)
            if self.final:
                await self.step(client)
        finally:
            await client.aclose()

    async def stop(self) -> None:
        task, self._task = self._task, None
        self._stop.set()
        if task is not None:
            with contextlib.suppress(Exception):
                await task
