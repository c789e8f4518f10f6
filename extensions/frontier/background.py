"""The scheduler's background tasks, and the one policy for Redis errors in them.

The engine calls the scheduler synchronously, so every Redis round trip runs in a
task spawned here. A Redis error backs off and is retried; FRONTIER_MAX_REDIS_FAILURES
in a row, or one script error (a bug, not an outage), closes the crawl with a
one-line reason. A Redis error that escapes a task goes through the same count (a
task that died of it used to print "Task exception was never retrieved" at exit),
and once the crawl is closing further errors are only counted: the one line said it.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING, Any

from redis.exceptions import (
    ClusterDownError,
    ReadOnlyError,
    RedisClusterException,
    RedisError,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from scrapy.core.engine import ExecutionEngine
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

BACKOFF_BASE_S = 0.2
BACKOFF_MAX_S = 5.0

# Errors of an unreachable Redis, or of a cluster whose slots are moving: a lost master
# answers CLUSTERDOWN / TRYAGAIN until its replica is promoted, and a demoted one
# READONLY; a missing slot is a RedisClusterException, not a RedisError.
REDIS_ERRORS = (RedisError, RedisClusterException)
CLUSTER_OUTAGES = (ClusterDownError, TryAgainError, ReadOnlyError)
_NAMES_A_PORT = re.compile(r":\d+\b")  # "... connecting to 127.0.0.1:6379."


def is_script_error(exc: BaseException) -> bool:
    """An error reply that retrying cannot cure (a script's bug), not an outage."""
    return isinstance(exc, ResponseError) and not isinstance(exc, CLUSTER_OUTAGES)


def one_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


class Background:
    """Tasks beside the engine; `closing` once the crawl is being closed."""

    def __init__(
        self,
        engine: ExecutionEngine,
        stats: StatsCollector,
        max_redis_failures: int,
        address: str = "",
    ) -> None:
        self.engine = engine
        self.stats = stats
        self.max_redis_failures = max_redis_failures
        self.address = address  # host:port of a single Redis ('' for a cluster)
        self.closing = False
        self._failures = 0  # Redis errors in a row
        self._lost_node: str | None = None  # the last connection error's line
        self._tasks: set[asyncio.Task[Any]] = set()  # the loop keeps only weak references
        self._discard: list[Callable[[], None]] = []

    def discard_on_close(self, clear: Callable[[], None]) -> None:
        """`clear` drops what a crawl closed by a Redis failure must not send again
        (the batch a script rejected would be retried forever)."""
        self._discard.append(clear)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_event_loop().create_task(self._supervised(coro))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _supervised(self, coro: Coroutine[Any, Any, Any]) -> Any:
        try:
            return await coro
        except REDIS_ERRORS as exc:
            self.failed(exc)  # the task's step is lost; its owner asks again or closes
        except Exception:
            # A bug: its traceback now, not "Task exception was never retrieved" at exit.
            logger.exception("Frontier background task failed")
        return None

    async def guarded(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run one Redis step; on a Redis error back off, and give up (closing the
        crawl with a one-line reason) after FRONTIER_MAX_REDIS_FAILURES in a row."""
        try:
            await coro
            self._failures, self._lost_node = 0, None
        except REDIS_ERRORS as exc:
            if self.failed(exc):
                await asyncio.sleep(min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2**self._failures))

    def failed(self, exc: BaseException) -> bool:
        """Count one Redis error; True when its step may be retried after a backoff,
        False once the crawl is closing (closed here, with its one line, if this error
        is the one too many or a script error)."""
        if self.closing:
            self.stats.inc_value("frontier/redis_errors")
            return False
        if is_script_error(exc):
            # Retrying the same batch would loop forever: stop the crawl loudly (the
            # batch stays unacked).
            logger.error("Frontier script failed: %s", exc)
            self.stats.inc_value("frontier/script_errors")
            self.close_crawl("frontier_error")
            return False
        self._failures += 1
        self.stats.inc_value("frontier/redis_errors")
        reason = self._reason(exc)
        if self._failures >= self.max_redis_failures:
            logger.error("Redis unavailable (%s); closing the crawl", reason)
            self.close_crawl("redis_unavailable")
            return False
        logger.warning("Redis error (%s); retrying", reason)
        return True

    def _reason(self, exc: BaseException) -> str:
        reason = one_line(exc)
        if isinstance(exc, RedisConnectionError):
            # "Error 111 connecting to <host:port>" names the node; a connection the
            # server dropped mid-call ("Connection closed by server.") does not.
            if self.address and not _NAMES_A_PORT.search(reason):
                reason = f"{reason} ({self.address})"
            self._lost_node = reason
        elif self._lost_node is not None:
            # A cluster that lost a master without a replica answers CLUSTERDOWN after
            # it, which names no node: say which one was lost.
            reason = f"{reason}; after: {self._lost_node}"
        return reason

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
