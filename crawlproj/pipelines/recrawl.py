"""Freshness pipelines: each fetch updates its URL's re-crawl state.

RecrawlLoadPipeline (before the content pipelines) reads the URL's stored state (for a
revisit: a new URL, admitted through URL-seen, has none to read) and classifies the
bodiless answers of a re-crawl: 304 is "not_modified" (the row points at the stored
copy), 404/410 "gone". ContentDedupPipeline then compares a 200 with the
stored copy ("unchanged" when the body or its main text is identical: not stored
again; any other difference, one sentence included, is a change).
RecrawlCommitPipeline (after the page store, before the row is finalised) records the
visit: validators for the next conditional GET, the change history and rate estimate,
and the next due time (extensions/recrawl/state.py).

Losing this state costs freshness, not data: a Redis error is counted and logged, and
the row goes on. A dropped connection or a Redis still loading its data (a restart:
BusyLoadingError is a ConnectionError) or a timeout is first tried again, after each of
RETRY_WAITS_S (recrawl/redis_retries): the state is computed from the stored one and
written whole, so a write repeated after a lost reply is the same write. Without it,
an external Redis killed and restarted mid-crawl left the pages being committed at
that moment without re-crawl state (2 of 157 in one run).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from redis.exceptions import RedisError
from scrapy.exceptions import NotConfigured

from crawlproj.checkpoint import checkpoint_for
from crawlproj.items import PageItem
from crawlproj.pipelines.metadata import simhash_hex
from extensions.admission.admit import seen_key
from extensions.frontier.scheduler import frontier_scheduler
from extensions.recrawl.state import ENABLED, DocState, Fetch, RecrawlStore, recrawl_store
from extensions.state.connection import TRANSIENT_ERRORS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

# response.meta key holding the URL's DocState before this fetch (None: first fetch).
PREV_STATE_META = "_recrawl_prev"
GONE = (404, 410)
# Waits (s) before each new try of a read or write that met a transient Redis error: 31 s
# in all, a restart's AOF replay and most of the frontier's own patience (10 failed steps
# 5 s apart, FRONTIER_MAX_REDIS_FAILURES) before it closes the crawl.
RETRY_WAITS_S = (1.0, 2.0, 4.0, 8.0, 16.0)
T = TypeVar("T")


async def retried(step: Callable[[], Awaitable[T]], crawler: Crawler) -> T:
    """`step()`, tried again after each of RETRY_WAITS_S while it meets a dropped
    connection, a loading Redis or a timeout, unless the crawl is closing (its frontier
    gave Redis up: the page's row must not hold the close); the last try's error is the
    caller's."""
    for wait in RETRY_WAITS_S:
        try:
            return await step()
        except TRANSIENT_ERRORS:
            if _closing(crawler):
                raise
            crawler.stats.inc_value("recrawl/redis_retries")
            await asyncio.sleep(wait)
    return await step()


def _closing(crawler: Crawler) -> bool:
    scheduler = frontier_scheduler(crawler)
    return scheduler is None or scheduler.session.background.closing


class _RecrawlPipeline:
    def __init__(self, crawler: Crawler) -> None:
        if not ENABLED.read(crawler.settings):
            raise NotConfigured("RECRAWL_ENABLED is off")
        self.crawler = crawler
        self.stats = crawler.stats
        self.checkpoint = checkpoint_for(crawler)
        self.store: RecrawlStore | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        return cls(crawler)

    def open_spider(self) -> None:
        self.store = recrawl_store(self.crawler)

    def redis_failed(self, exc: RedisError, url: str) -> None:
        logger.warning("Re-crawl state of %s not updated: Redis error %s", url, exc)
        self.stats.inc_value("recrawl/redis_errors")


class RecrawlLoadPipeline(_RecrawlPipeline):
    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem) or self.store is None:
            return item
        response = self.checkpoint.response(item)
        if response is None:
            return item
        try:
            prev = await retried(lambda: self._load(response, item["url"]), self.crawler)
        except RedisError as exc:
            self.redis_failed(exc, item["url"])
            return item
        response.meta[PREV_STATE_META] = prev
        if response.status == 304:
            item["change"] = "not_modified"
            if prev is not None:
                item["content_hash"] = prev.content_hash or None
                item["text_hash"] = prev.text_hash or None
                item["simhash"] = int(prev.simhash, 16) if prev.simhash else None
                item["content_ref"] = prev.content_ref or None
                item["duplicate_of"] = prev.duplicate_of or None
        elif response.status in GONE and prev is not None:
            item["change"] = "gone"  # a stored page disappeared: no more re-crawls
        return item

    async def _load(self, response: Response, url: str) -> DocState | None:
        """The URL's stored state, read only where there can be one. A request that
        passed URL-seen as a new URL has none: a stored URL is seen, and its re-visits
        (the re-crawl feeder's, a retry's) bypass URL-seen as dont_filter requests. One
        Redis round trip fewer on every first fetch, the bulk of a crawl. (A lease that
        expired after its page's state was written is fetched again as new: its state
        is then rewritten with one visit, which it had.)"""
        assert self.store is not None
        request = response.request
        if request is not None and not request.dont_filter:
            self.stats.inc_value("recrawl/load/new_url")
            return None
        self.stats.inc_value("recrawl/load/read")
        return await self.store.load(seen_key(url))


class RecrawlCommitPipeline(_RecrawlPipeline):
    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem) or self.store is None:
            return item
        response = self.checkpoint.response(item)
        if response is None or PREV_STATE_META not in response.meta:
            return item
        prev: DocState | None = response.meta[PREV_STATE_META]
        fp = seen_key(item["url"])
        at = datetime.fromisoformat(item["fetched_at"]).timestamp()
        try:
            store = self.store
            if item.get("change") == "gone":
                await retried(lambda: store.forget(fp, at), self.crawler)
                self.stats.inc_value("recrawl/gone")
                return item
            if not (200 <= response.status < 300 or response.status == 304):
                return item
            fetch = Fetch(
                fp=fp,
                url=item["url"],
                at=at,
                changed=None if prev is None else item.get("change") == "changed",
                fields=self._fields(item, response),
                last_modified=item.get("last_modified") or "",
            )
            item["change_rate"] = await retried(lambda: store.record(fetch, prev), self.crawler)
        except RedisError as exc:
            self.redis_failed(exc, item["url"])
            return item
        self.stats.inc_value(f"recrawl/visits/{item.get('change') or 'new'}")
        return item

    @staticmethod
    def _fields(item: PageItem, response: Response) -> dict[str, Any]:
        """Doc fields this fetch sets. A bodiless or unchanged answer keeps the stored
        copy's hashes; validators are replaced only when the server sent new ones."""
        fields: dict[str, Any] = {"d": item.get("depth") or 0}
        assert response.request is not None  # a downloaded response, tied to its request
        callback = getattr(response.request.callback, "__name__", None)
        if callback and callback != "parse":
            fields["cb"] = callback
        for name, key in (("etag", "etag"), ("last_modified", "lm")):
            if item.get(name):
                fields[key] = item[name]
        if item.get("change") in ("unchanged", "not_modified"):
            return fields
        fields.update(
            etag=item.get("etag") or "",
            lm=item.get("last_modified") or "",
            ch=item.get("content_hash") or "",
            th=item.get("text_hash") or "",
            sh=simhash_hex(item.get("simhash")) or "",
            ref=item.get("content_ref") or "",
            dup=item.get("duplicate_of") or "",
        )
        return fields
