"""Crawl-wide hashes with one field per page: content hashes, page templates and WARC
originals (state/keys.py, D:content_hashes, D:page_templates, D:warc_records).

They grow with the crawl like its re-crawl state, and no script reads them beside
other keys, so on a sharded crawl each field lives in the page shard of the field
itself (content hash, template digest, URL): every master holds and serves its share
instead of the one master of the crawl's tag. Unsharded, the shard is the crawl's tag:
the keys of a single-Redis crawl are unchanged.

A sharded crawl created before this layout (no G:shard_tags beside G:shards) wrote its
fields under the crawl's tag. For it, a field missing from its page shard is looked up
there too: one more HGET, only on a miss, only for such a crawl. A first writer found
there stays the first writer (it is copied into the page shard, so the next lookup of
that field is one HGET again).

The shard count is read once, on first use: the pipelines only look fields up after the
frontier opened, which fixes G:shards (frontier/sharded.py, crawl_keys).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from extensions.state.connection import AnyRedis, as_str
from extensions.state.keys import FrontierKeys, PageKeys, ShardedKeys


class PageHash:
    """One of the per-page hashes of a crawl, `family` naming its key in a page shard
    (e.g. `lambda pages: pages.content_hashes`). Sync: the pipelines call it from their
    worker threads; concurrent first uses read the same layout."""

    def __init__(self, redis: AnyRedis, crawl: str, family: Callable[[PageKeys], str]) -> None:
        self.redis = redis
        self.crawl = crawl
        self.family = family
        self._layout: tuple[FrontierKeys, bool] | None = None

    def layout(self) -> tuple[FrontierKeys, bool]:
        """The crawl's keys with its page shards, and whether its fields may still sit
        under the crawl's own tag (a sharded crawl created before this layout)."""
        if self._layout is None:
            keys = FrontierKeys(self.crawl)
            stored = ShardedKeys.stored(self.crawl, *self.redis.mget(keys.shards, keys.shard_tags))
            self._layout = stored.crawl_keys, stored.legacy_page_state
        return self._layout

    def key(self, field: str) -> str:
        """The key holding `field`: its page shard's hash."""
        return self.family(self.layout()[0].page_of(field))

    def get(self, field: str) -> str | None:
        return self.got(field, self.redis.hget(self.key(field), field))

    def queue_get(self, pipe: Any, field: str) -> None:
        """get's HGET on a caller's pipeline (one reply; give it to got)."""
        pipe.hget(self.key(field), field)

    def got(self, field: str, value: Any) -> str | None:
        """get's answer from its HGET's reply."""
        if value is None:
            return self._legacy(field)
        return as_str(value)

    def set(self, field: str, value: str) -> None:
        self.redis.hset(self.key(field), field, value)

    def first_writer(self, field: str, value: str) -> str:
        """HSETNX then HGET in one round trip: the value of whoever wrote `field` first
        (shared by all workers); before this layout, maybe under the crawl's tag."""
        pipe = self.redis.pipeline(transaction=False)
        self.queue_first_writer(pipe, field, value)
        return self.first_written(field, pipe.execute())

    def queue_first_writer(self, pipe: Any, field: str, value: str) -> None:
        """first_writer's HSETNX and HGET on a caller's pipeline (two replies; give them
        to first_written)."""
        key = self.key(field)
        pipe.hsetnx(key, field, value)
        pipe.hget(key, field)

    def first_written(self, field: str, replies: Sequence[Any]) -> str:
        """first_writer's answer from its two replies."""
        added, first = replies
        if added:
            earlier = self._legacy(field)
            if earlier is not None:
                self.redis.hset(self.key(field), field, earlier)
                return earlier
        return as_str(first)

    def _legacy(self, field: str) -> str | None:
        keys, legacy = self.layout()
        if not legacy:
            return None
        value = self.redis.hget(self.family(keys.legacy_pages), field)
        return None if value is None else as_str(value)
