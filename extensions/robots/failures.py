"""Consecutive robots.txt failures per origin, counted by all workers together.

A robots.txt that keeps answering 5xx/429 or timing out disallows its origin (RFC 9309
2.3.1.4) for a while, then is fetched again; after ROBOTS_MAX_ERROR_RETRIES unavailable
answers in a row the crawl gives up on the origin (its pages are dropped) so a finite crawl
still ends. The count is crawl-wide (one Redis hash): counted per process, N workers would
each retry the origin as long, N times the load on a failing server.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from extensions.bounded import keep_newest
from extensions.state.connection import as_str

if TYPE_CHECKING:
    from extensions.state.connection import AnyAsyncRedis


# Origins whose count is kept here. An origin that never recovers would otherwise stay for
# the whole crawl; one evicted is read again by the next load() (RobotsGate.prefetch loads
# every origin without a usable verdict before it is judged), so the cap costs a re-read.
LOCAL_ORIGINS = 100_000


class RobotsFailures:
    """The shared count behind RobotsGate.gave_up, with a local copy per origin."""

    def __init__(self, redis: AnyAsyncRedis, key: str, max_error_retries: int) -> None:
        self._redis = redis
        self._key = key  # FrontierKeys.robots_errors
        self.max_error_retries = max_error_retries
        self._counts: OrderedDict[str, int] = OrderedDict()  # origin -> last count seen here

    async def load(self, origins: Iterable[str]) -> None:
        """Read the shared counts of `origins` (other workers' failures) in one HMGET."""
        wanted = list(origins)
        if not wanted:
            return
        values = await self._redis.hmget(self._key, wanted)
        for origin, value in zip(wanted, values, strict=True):
            if value is None:
                self._counts.pop(origin, None)
            else:
                self._keep(origin, int(as_str(value)))

    async def failed(self, origin: str) -> int:
        """One more unavailable answer for `origin`, by any worker; the count after it."""
        count = int(await self._redis.hincrby(self._key, origin, 1))
        self._keep(origin, count)
        return count

    def _keep(self, origin: str, count: int) -> None:
        keep_newest(self._counts, origin, count, LOCAL_ORIGINS)

    async def recovered(self, origin: str) -> None:
        """A usable verdict: the origin's failures start over (for every worker)."""
        self._counts.pop(origin, None)
        await self._redis.hdel(self._key, origin)

    def forget(self, origin: str) -> None:
        """A usable verdict written by another worker was read here."""
        self._counts.pop(origin, None)

    def gave_up(self, origin: str) -> bool:
        return self._counts.get(origin, 0) > self.max_error_retries
