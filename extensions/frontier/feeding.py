"""Re-crawl feeding: due stored URLs enter the frontier as conditional GETs.

The lease loop feeds once per RECRAWL_TICK (extensions/recrawl/feeder.py claims the
due URLs). A URL the frontier refuses now (blocked, robots.txt) is postponed by
RECRAWL_INTERVAL instead of coming back every RECRAWL_CLAIM_TTL. With
RECRAWL_ENABLED off there is no feeder and every method here is a no-op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request

    from extensions.frontier.background import Background
    from extensions.frontier.batching import Batches
    from extensions.frontier.core import FrontierReply
    from extensions.recrawl.feeder import RecrawlFeeder


class RecrawlFeeding:
    def __init__(
        self,
        *,
        feeder: RecrawlFeeder | None,
        batches: Batches,
        background: Background,
        clock: Callable[[], float],
    ) -> None:
        self.feeder = feeder
        self.batches = batches
        self.background = background
        self.stats = background.stats
        self.clock = clock
        self.queued = 0  # re-crawls waiting in the frontier, by the latest reply

    def saw(self, reply: FrontierReply) -> None:
        self.queued = reply.recrawl_queued

    def keeps_running(self) -> bool:
        return self.feeder is not None and self.feeder.keeps_running()

    def next_tick(self) -> float | None:
        """When the lease loop should wake to feed; None without a feeder."""
        return None if self.feeder is None else self.feeder.next_tick

    async def feed_if_due(self) -> None:
        feeder = self.feeder
        if feeder is None or self.clock() < feeder.next_tick:
            return
        now = self.clock()
        for request in await feeder.feed(self.queued, now):
            if self.batches.enqueue(request):
                self.stats.inc_value("recrawl/fed")
                continue
            self.stats.inc_value("recrawl/refused")
            await feeder.postpone(request.meta["recrawl"], now)
        self.stats.set_value("recrawl/due_now", feeder.due)

    def postpone(self, request: Request) -> None:
        """A claimed re-crawl dropped at dispatch: due again after RECRAWL_INTERVAL."""
        fp = request.meta.get("recrawl")
        if fp and self.feeder is not None:
            self.background.spawn(self.background.guarded(self.feeder.postpone(fp, self.clock())))
