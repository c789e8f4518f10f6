"""When the crawl is over: no work left in Redis, by a reply known to be the latest.

Replies of calls in flight together can be applied out of order (a lease sent before
an admit, and its 'nothing queued' applied after the admit's 'one queued'), so zero
ends the crawl only once a counters-only round trip, sent when nothing else was
pending, says so too.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from redis.exceptions import RedisError

if TYPE_CHECKING:
    from collections.abc import Callable

    from extensions.frontier.background import Background
    from extensions.frontier.core import Frontier, FrontierReply
    from extensions.frontier.sharded import ShardedFrontier


class EndOfCrawl:
    def __init__(
        self,
        frontier: Frontier | ShardedFrontier,
        background: Background,
        note: Callable[[FrontierReply], None],
    ) -> None:
        self.frontier = frontier
        self.background = background
        self.note = note  # every reply goes through the scheduler's note
        self.remaining: int | None = None  # work left in Redis; None = not known yet
        self._confirmed_zero = False
        self._confirm_task: asyncio.Task[None] | None = None

    def saw(self, reply: FrontierReply) -> None:
        self.remaining = reply.remaining
        self._confirmed_zero = False

    def confirmed(self) -> bool:
        """True once a confirming round trip found nothing left; until then, asks for
        one (the engine asks again on its next tick)."""
        if self._confirmed_zero:
            return True
        if self._confirm_task is None and not self.background.closing:
            self._confirm_task = self.background.spawn(self._confirm())
        return False

    async def _confirm(self) -> None:
        try:
            reply = await self.frontier.lease(0)
            self.note(reply)
            self._confirmed_zero = reply.remaining == 0
        except RedisError:
            pass  # asked again on the next engine tick
        finally:
            self._confirm_task = None
            self.background.wake_engine()
