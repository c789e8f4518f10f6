"""The leases this worker holds (lease, not pop: DESIGN invariant 4), kept alive.

A leased request is buffered here until the engine takes it, and its lease is held
until the request is acked or released; `downloading` tells a fetch that ended from
one that never reached the downloader.

A lease expires FRONTIER_LEASE_TTL after it was taken or its fetch ended, and an
expired lease is re-delivered; but a fetched page is acked only once its body is
stored, and a slow store (S3 retrying, see crawlproj/checkpoint.py) can outlast the
TTL. LeaseRenewal renews, every third of the TTL, each lease this worker held at the
previous tick too (lua/renew.lua), so a live worker's page is never fetched twice; a
worker that dies stops renewing, and its leases expire as before.

Stats: frontier/leases_renewed  leases whose expiry a renewal pushed back
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import TYPE_CHECKING

from extensions.frontier.sharded import ShardedFrontier
from extensions.state.lua import FRONTIER, read_lua

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request

    from extensions.frontier.background import Background
    from extensions.frontier.core import Frontier

# A lease taken just after a tick is renewed two ticks later: at 2/3 of its TTL.
RENEW_FRACTION = 1 / 3


class LeaseBook:
    """The leases this worker holds, from the lease until the ack or release."""

    def __init__(self) -> None:
        self.buffer: deque[Request] = deque()  # leased, passed the gates, not handed out
        self.leases: dict[str, Request] = {}  # lease id -> request, until acked
        self.downloading: set[str] = set()  # lease ids whose fetch has not ended

    def take(self, lease_id: str, request: Request) -> None:
        self.leases[lease_id] = request
        self.downloading.add(lease_id)

    @property
    def processing(self) -> int:
        """Leases whose fetch ended and whose page the engine has not finished (parse,
        pipelines): their outcomes have not reached the frontier yet."""
        return len(self.leases) - len(self.downloading)

    def hand_out(self) -> Request | None:
        return self.buffer.popleft() if self.buffer else None

    def end_fetch(self, lease_id: str) -> bool:
        """The fetch behind `lease_id` ended; False if it was not downloading."""
        if lease_id not in self.downloading:
            return False
        self.downloading.discard(lease_id)
        return True

    def finish(self, lease_id: str) -> bool:
        """The engine is done with the request; False if the lease is not held here."""
        if self.leases.pop(lease_id, None) is None:
            return False
        self.downloading.discard(lease_id)
        return True

    def forget(self, lease_id: str) -> None:
        """Released or dropped before any fetch of its own."""
        self.leases.pop(lease_id, None)
        self.downloading.discard(lease_id)

    def drain(self) -> list[str]:
        """Closing: the buffered leases never reached the downloader."""
        lease_ids = [request.meta["frontier_lease"] for request in self.buffer]
        self.buffer.clear()
        for lease_id in lease_ids:
            self.leases.pop(lease_id, None)
        return lease_ids


class LeaseRenewal:
    """Renews the leases `book` still holds, on a timer of RENEW_FRACTION x the TTL."""

    def __init__(
        self,
        *,
        frontier: Frontier | ShardedFrontier,
        book: LeaseBook,
        background: Background,
        clock: Callable[[], float],
    ) -> None:
        self.frontier = frontier
        self.book = book
        self.background = background
        self.clock = clock
        self.ttl_s = frontier.config.lease_ttl
        self.interval_s = self.ttl_s * RENEW_FRACTION
        self._script = frontier.redis.register_script(read_lua(FRONTIER, "renew"))
        self._previous: set[str] = set()  # the leases held at the last tick
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = self.background.spawn(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while not self.background.closing:
            await asyncio.sleep(self.interval_s)
            await self.background.guarded(self.tick())

    async def tick(self) -> None:
        """Renew the leases held now that were held at the last tick as well: each has
        been held for at least one interval, and is renewed before 2/3 of its TTL."""
        held = set(self.book.leases)
        due, self._previous = held & self._previous, held
        if due:
            await self.renew(sorted(due))

    async def renew(self, lease_ids: list[str]) -> int:
        """Push the expiry of each lease still there to now + TTL; one script per shard."""
        groups: dict[int, list[str]] = {}
        for lease_id in lease_ids:
            groups.setdefault(self._shard_of(lease_id), []).append(lease_id)
        expires_at = self.clock() + self.ttl_s
        renewed = 0
        for index, ids in groups.items():
            leases = self._shards()[index].keys.key("leases")
            renewed += int(await self._script(keys=[leases], args=[expires_at, *ids]))
        self.background.stats.inc_value("frontier/leases_renewed", renewed)
        return renewed

    def _shards(self) -> list[Frontier]:
        frontier = self.frontier
        return frontier.shards if isinstance(frontier, ShardedFrontier) else [frontier]

    def _shard_of(self, lease_id: str) -> int:
        frontier = self.frontier
        if not isinstance(frontier, ShardedFrontier):
            return 0
        return frontier.keys.index_of(lease_id.rsplit("#", 1)[0])
