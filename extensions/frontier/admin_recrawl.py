"""The admin API's re-crawl verbs (`scrapy recrawl`, the re-crawl part of `scrapy status`):
marking stored URLs due and reading the re-crawl state. Re-crawl state is not sharded by
IP but by page (state/keys.py, page shards): these visit every page shard, and on a
sharded crawl the crawl's own tag too, where a crawl started before page shards kept it
(recrawl/layout.py). FrontierAdmin (admin.py, the queue verbs) inherits them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from extensions.state.connection import as_str

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from extensions.state.connection import AnyRedis
    from extensions.state.keys import PageKeys, ShardedKeys

# Stored URLs read per Redis call when marking re-crawls (ZSCAN: no long Redis call).
MARK_BATCH = 500


@dataclass(frozen=True)
class RecrawlStats:
    stored_urls: int
    due_now: int
    rates: dict[str, int]  # change-rate histogram bucket -> stored URLs


@dataclass(frozen=True)
class Marked:
    """`mark_due`: stored URLs seen, matched, and what became of the matched ones."""

    stored: int
    matched: int
    made_due: int
    already_due: int
    claimed: int  # a worker already re-fetches them


class RecrawlVerbs:
    """Re-crawl verbs of FrontierAdmin, which sets these attributes."""

    client: AnyRedis
    keys: ShardedKeys
    _mark: Any  # recrawl/lua/mark.lua, registered on the client

    def mark_due(self, wanted: Callable[[str], bool], now: float) -> Marked:
        """Make the stored URLs `wanted` accepts due at `now` (earlier only), unless a
        worker claimed them."""
        stored = matched = 0
        counts = [0, 0, 0]  # made due, already due, claimed
        for keys in self._page_places():
            for batch in self._stored_batches(keys):
                stored += len(batch)
                fps = [fp for fp, url in batch if wanted(url)]
                matched += len(fps)
                if fps:
                    places = [keys.recrawl_due, keys.recrawl_claims]
                    reply = self._mark(keys=places, args=[now, *fps])
                    counts = [c + int(r) for c, r in zip(counts, reply, strict=True)]
        return Marked(stored, matched, *counts)

    def _page_places(self) -> list[PageKeys]:
        """The page shards, and on a sharded crawl the pre-shard place (maybe empty)."""
        keys = self.keys.crawl_keys
        pages = keys.pages()
        return pages if keys.page_shards == 1 else [*pages, keys.legacy_pages]

    def _stored_batches(self, keys: PageKeys) -> Iterator[list[tuple[str, str]]]:
        """(fp, url) of every stored URL, MARK_BATCH at a time."""
        fps: list[str] = []
        for member, _score in self.client.zscan_iter(keys.recrawl_due, count=MARK_BATCH):
            fps.append(as_str(member))
            if len(fps) == MARK_BATCH:
                yield self._with_urls(keys, fps)
                fps = []
        if fps:
            yield self._with_urls(keys, fps)

    def _with_urls(self, keys: PageKeys, fps: list[str]) -> list[tuple[str, str]]:
        pipe = self.client.pipeline(transaction=False)
        for fp in fps:
            pipe.get(keys.doc(fp))
        docs = pipe.execute()
        return [(fp, json.loads(doc)["u"]) for fp, doc in zip(fps, docs, strict=True) if doc]

    def recrawl_stats(self, now: float) -> RecrawlStats:
        stored = due = 0
        rates: dict[str, int] = {}
        for keys in self._page_places():
            stored += int(self.client.zcard(keys.recrawl_due))
            due += int(self.client.zcount(keys.recrawl_due, "-inf", now))
            for bucket, n in self.client.hgetall(keys.recrawl_rates).items():
                rates[as_str(bucket)] = rates.get(as_str(bucket), 0) + int(n)
        return RecrawlStats(stored_urls=stored, due_now=due, rates=rates)
