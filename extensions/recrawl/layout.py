"""Where a crawl's re-crawl state lives: its page shards (state/keys.py).

A sharded crawl spreads its per-page state over one page shard per frontier shard, so
on a Redis Cluster every master holds and scripts its share. The shard count is the
crawl's own (G:shards, fixed by the frontier when the crawl starts), read once on
first use: the pipelines and the feeder only touch the state after the frontier opened.

A sharded crawl started before page shards kept its state under the crawl's tag. That
"legacy" place is read while it holds anything: its due URLs are claimed like a
shard's, a page found only there is moved to its shard by its next commit. It only
shrinks (no worker writes it any more), so once empty it is not looked at again.
"""

from __future__ import annotations

from extensions.state.connection import AnyAsyncRedis
from extensions.state.keys import FrontierKeys, PageKeys


class PageLayout:
    """The page shards of one crawl and, while it holds state, the legacy place."""

    def __init__(self, redis: AnyAsyncRedis, keys: FrontierKeys) -> None:
        self.redis = redis
        self.keys = keys
        self.legacy: PageKeys | None = None
        self._open = False

    async def open(self) -> FrontierKeys:
        """The crawl's keys with its page-shard count (one GET, the first time)."""
        if not self._open:
            if self.keys.page_shards == 1:
                count = int(await self.redis.get(self.keys.shards) or 1)
                self.keys = FrontierKeys(self.keys.crawl, page_shards=count)
            if self.keys.page_shards > 1:
                legacy = self.keys.legacy_pages
                if await self.redis.zcard(legacy.recrawl_due):
                    self.legacy = legacy
            self._open = True
        return self.keys

    async def places(self) -> list[PageKeys]:
        """Every place due URLs and histogram counts may be: the shards (+ legacy)."""
        keys = await self.open()
        return [*keys.pages(), self.legacy] if self.legacy is not None else keys.pages()

    async def shard_of(self, fp: str) -> PageKeys:
        return (await self.open()).page_of(fp)
