"""PageStorePipeline: the body goes to the page store before the page's links are followed.

gzip + content-addressed key + upload run in a bounded thread pool (never on
the reactor), retried with exponential backoff. A row gets ``content_ref``
only after the store acknowledged the object, so no row claims a body that is
not stored. When a body cannot be stored after PAGESTORE_RETRIES retries, the
crawl stops (reason ``pagestore_unavailable``, one error line): its item is
dropped and its page handed back to the frontier, as is every page still in
flight, so a later crawl on the same frontier fetches and stores them.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from scrapy.exceptions import CloseSpider, DropItem

from crawlproj.checkpoint import checkpoint_for
from crawlproj.items import PageItem
from crawlproj.pipelines.metadata import KEPT_COPY
from extensions.config import Setting, Table, above, at_least, between, read
from extensions.pagestore.backends import open_store, store_uri
from extensions.pagestore.protocol import (
    PageStore,
    StoreUnavailable,
    content_key,
    one_line,
    pack_body,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

CLOSE_REASON = "pagestore_unavailable"
# Errors worth retrying: the store's and the network's. Anything else is a bug
# and surfaces as Scrapy's item_error with a traceback.
STORE_ERRORS = (BotoCoreError, ClientError, OSError)


@dataclass(frozen=True)
class StoreConfig:
    uri: str
    retries: int
    retry_delay: float
    threads: int
    timeout: float  # per S3 connect or read; the S3 store reads it itself

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> StoreConfig:
        """ValueError names the bad setting."""
        return read(STORE, settings, uri=store_uri(settings))


STORE = Table(
    StoreConfig,
    Setting("PAGESTORE_RETRIES", "retries", int, at_least(0)),
    Setting("PAGESTORE_RETRY_DELAY", "retry_delay", float, at_least(0)),
    Setting("PAGESTORE_THREADS", "threads", int, between(1, 256)),
    Setting("PAGESTORE_TIMEOUT", "timeout", float, above(0)),
)


def check_content_settings(settings: BaseSettings) -> None:
    """Crawl preflight: when this pipeline is enabled, the store answers (ValueError or
    StoreUnavailable, one line)."""
    config = StoreConfig.from_settings(settings)
    pipelines = settings.getwithbase("ITEM_PIPELINES")
    path = f"{PageStorePipeline.__module__}.{PageStorePipeline.__qualname__}"
    if pipelines.get(path) is not None:
        open_store(config.uri, settings).check()


class PageStorePipeline:
    """Stores each unique body once; sets content_ref; stops the crawl if it cannot."""

    def __init__(self, crawler: Crawler, config: StoreConfig, store: PageStore) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = config
        self.store = store
        self.checkpoint = checkpoint_for(crawler)
        self.pool = ThreadPoolExecutor(config.threads, thread_name_prefix="pagestore")
        self.down: str | None = None  # the reason, once the store gave up
        self._closing: asyncio.Task[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageStorePipeline:
        # A bad PAGESTORE_URI stops the crawl (ValueError names the setting):
        # switching storage off silently would lose every body.
        config = StoreConfig.from_settings(crawler.settings)
        return cls(crawler, config, open_store(config.uri, crawler.settings))

    async def open_spider(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self.pool, self.store.check)
        except StoreUnavailable as exc:
            # The engine honours CloseSpider from a component that fails to start.
            self.down = str(exc)
            logger.error("Page store unavailable, stopping the crawl: %s", exc)
            raise CloseSpider(CLOSE_REASON) from None
        logger.info("Page store %s", self.store.uri)

    async def close_spider(self) -> None:
        self.pool.shutdown(wait=True)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        response = self.checkpoint.response(item)
        if response is None:
            self.stats.inc_value("pagestore/no_body")
            return item
        if item.get("duplicate_of"):
            self.stats.inc_value("pagestore/skipped_duplicate")
            return item
        if item.get("soft_404"):
            # A host's "not found" answer under another URL (crawlproj/pipelines/soft404.py).
            self.stats.inc_value("pagestore/skipped_soft404")
            return item
        if item.get("change") in KEPT_COPY:
            self.stats.inc_value("pagestore/skipped_unchanged")
            return item
        if not response.body:
            self.stats.inc_value("pagestore/skipped_empty")
            return item
        try:
            key, uploaded = await self._store(response.body, item.get("content_type"))
        except StoreUnavailable as exc:
            self.stats.inc_value("pagestore/failed")
            self.checkpoint.fail(item, exc)
            raise DropItem(f"body not stored: {exc}", log_level="DEBUG") from None
        item["content_ref"] = self.store.ref(key)
        self.stats.inc_value("pagestore/uploaded" if uploaded else "pagestore/existed")
        return item

    async def _store(self, body: bytes, content_type: str | None) -> tuple[str, bool]:
        """(key, uploaded) after at most 1 + PAGESTORE_RETRIES attempts."""
        loop = asyncio.get_running_loop()
        delay = self.config.retry_delay
        for attempt in range(self.config.retries + 1):
            if self.down is not None:
                raise StoreUnavailable(self.down)  # fail fast once the crawl is stopping
            try:
                return await loop.run_in_executor(self.pool, self._put, body, content_type)
            except STORE_ERRORS as exc:
                reason = self._describe(exc)
                if attempt == self.config.retries:
                    self._give_up(f"{reason} (after {attempt + 1} attempts)")
                    raise StoreUnavailable(reason) from None
                self.stats.inc_value("pagestore/retries")
                logger.debug("Page store attempt %d failed: %s", attempt + 1, reason)
                await asyncio.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _put(self, body: bytes, content_type: str | None) -> tuple[str, bool]:
        # Worker thread: hashing and gzip are CPU work the reactor must not do.
        key = content_key(body, content_type)
        return key, self.store.put(key, pack_body(body))

    def _describe(self, exc: BaseException) -> str:
        describe = getattr(self.store, "describe", None)
        return describe(exc) if describe else f"PAGESTORE_URI {self.store.uri}: {one_line(exc)}"

    def _give_up(self, reason: str) -> None:
        """Stop the crawl once, with one error line; later failures only count."""
        if self.down is not None:
            return
        self.down = reason
        logger.error("Page store unavailable, stopping the crawl: %s", reason)
        # Crawler._engine: None outside a running crawl (Scrapy's documented way to
        # read it without raising); tools driving the pipeline have nothing to stop.
        engine = getattr(self.crawler, "_engine", None)
        if engine is not None:
            # Not awaited: closing waits for this very item to leave the scraper.
            self._closing = asyncio.ensure_future(engine.close_spider_async(reason=CLOSE_REASON))
