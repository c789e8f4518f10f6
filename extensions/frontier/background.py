"""The scheduler's background tasks, and the one policy for Redis errors in them.

The engine calls the scheduler synchronously, so every Redis round trip runs in a
task spawned here. A Redis error backs off and is retried; FRONTIER_MAX_REDIS_FAILURES
in a row, or one script error (a bug, not an outage), closes the crawl with a
one-line reason.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError, ResponseError

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from scrapy.core.engine import ExecutionEngine
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

BACKOFF_BASE_S = 0.2
BACKOFF_MAX_S = 5.0


class Background:
    """Tasks beside the engine; `closing` once the crawl is being closed."""

    def __init__(
        self, engine: ExecutionEngine, stats: StatsCollector, max_redis_failures: int
    ) -> None:
        self.engine = engine
        self.stats = stats
        self.max_redis_failures = max_redis_failures
        self.closing = False
        self._failures = 0  # Redis errors in a row
        self._tasks: set[asyncio.Task[Any]] = set()  # the loop keeps only weak references
        self._discard: list[Callable[[], None]] = []

    def discard_on_close(self, clear: Callable[[], None]) -> None:
        """`clear` drops what a crawl closed by a Redis failure must not send again
        (the batch a script rejected would be retried forever)."""
        self._discard.append(clear)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_event_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def guarded(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run one Redis step; on a Redis error back off, and give up (closing the
        crawl with a one-line reason) after FRONTIER_MAX_REDIS_FAILURES in a row."""
        try:
            await coro
            self._failures = 0
        except ResponseError as exc:
            # A script error is a bug, not an outage: retrying the same batch would
            # loop forever, so stop the crawl loudly (the batch stays unacked).
            logger.error("Frontier script failed: %s", exc)
            self.stats.inc_value("frontier/script_errors")
            self.close_crawl("frontier_error")
        except RedisError as exc:
            self._failures += 1
            self.stats.inc_value("frontier/redis_errors")
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if self._failures >= self.max_redis_failures:
                logger.error("Redis unavailable (%s); closing the crawl", reason)
                self.close_crawl("redis_unavailable")
                return
            logger.warning("Redis error (%s); retrying", reason)
            await asyncio.sleep(min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2**self._failures))

    def close_crawl(self, reason: str) -> None:
        if not self.closing:
            self.closing = True
            for clear in self._discard:
                clear()
            self.spawn(self.engine.close_spider_async(reason=reason))

    def wake_engine(self) -> None:
        """Make the engine ask for requests now, not on its 5 s heartbeat (DESIGN
        invariant 5; `nextcall.schedule()` is how Scrapy 2.19 wakes it)."""
        slot = self.engine._slot
        if slot is not None and not self.closing:
            slot.nextcall.schedule()
