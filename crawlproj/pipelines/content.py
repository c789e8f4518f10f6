"""ContentDedupPipeline: exact and near-duplicate detection, shared by all workers.

Per page: content_hash (sha256 of the whitespace-normalised body) and simhash
(64-bit fingerprint of the visible text). A hash seen before (Redis hash
content hash -> URL) is an exact duplicate; otherwise the simhash index
(SimhashIndex.check_and_add, atomic across workers) finds near duplicates
within NEARDUP_MAX_DISTANCE bits. A duplicate's row gets ``duplicate_of``, the
URL of the page whose stored body stands for it (a near duplicate's hash maps
to its original, so duplicate_of never points at another duplicate), and the
page store skips its body. The content hash is recorded for every page.

The work (lxml parse, fingerprint, two or three Redis round trips) runs in a
small thread pool: never on the reactor.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError
from scrapy.http import TextResponse

from crawlproj.checkpoint import checkpoint_for
from crawlproj.items import PageItem
from crawlproj.pipelines.recrawl import PREV_STATE_META
from extensions.frontier.keys import FrontierKeys
from extensions.neardup import DEFAULT_MAX_DISTANCE, content_hash, fingerprint, hamming
from extensions.neardup_index import SimhashIndex, plan_blocks
from extensions.pagestore import is_html_type
from extensions.redis_conn import RedisUnavailable, redis_for
from extensions.text import visible_text

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from extensions.recrawl import DocState

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Signature:
    content_hash: str | None  # None for an empty body
    simhash: int | None  # None when the body has no text
    words: int  # words of visible text (short pages skip the near-duplicate index)


def content_signature(response: Response, content_type: str | None) -> Signature:
    """The content fields of a response; replay calls this too."""
    body = response.body
    if not body:
        return Signature(None, None, 0)
    if isinstance(response, TextResponse):
        # response.text honours the header charset; the bytes alone would not.
        text = visible_text(response.text) if is_html_type(content_type) else response.text
    else:
        text = ""
    simhash = fingerprint(text) if text.strip() else None
    return Signature(content_hash(body), simhash, len(text.split()))


@dataclass(frozen=True)
class NeardupConfig:
    enabled: bool
    max_distance: int
    blocks: int
    bucket_cap: int
    min_words: int
    threads: int

    @classmethod
    def from_settings(cls, settings: Any) -> NeardupConfig:
        config = cls(
            enabled=settings.getbool("NEARDUP_ENABLED", True),
            max_distance=settings.getint("NEARDUP_MAX_DISTANCE", DEFAULT_MAX_DISTANCE),
            blocks=settings.getint("NEARDUP_BLOCKS", 4),
            bucket_cap=settings.getint("NEARDUP_BUCKET_CAP", 1000),
            min_words=settings.getint("NEARDUP_MIN_WORDS", 50),
            threads=settings.getint("NEARDUP_THREADS", 2),
        )
        for name, value, low, high in (
            ("NEARDUP_MAX_DISTANCE", config.max_distance, 0, 32),
            ("NEARDUP_BLOCKS", config.blocks, 1, 16),
            ("NEARDUP_BUCKET_CAP", config.bucket_cap, 1, 10**6),
            ("NEARDUP_MIN_WORDS", config.min_words, 0, 10**6),
            ("NEARDUP_THREADS", config.threads, 1, 64),
        ):
            if not low <= value <= high:
                raise ValueError(f"{name}={value} is out of range {low}..{high}")
        try:
            plan_blocks(config.max_distance, config.blocks)
        except ValueError as exc:
            raise ValueError(f"NEARDUP_MAX_DISTANCE / NEARDUP_BLOCKS: {exc}") from None
        return config


class ContentDedupPipeline:
    """Sets content_hash, simhash and duplicate_of; counts every branch under content/."""

    def __init__(self, crawler: Crawler, config: NeardupConfig) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = config
        self.checkpoint = checkpoint_for(crawler)
        self.pool = ThreadPoolExecutor(config.threads, thread_name_prefix="neardup")
        self.index: SimhashIndex | None = None
        self.hashes_key = ""
        self.redis: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentDedupPipeline:
        return cls(crawler, NeardupConfig.from_settings(crawler.settings))

    async def open_spider(self) -> None:
        assert self.crawler.spider is not None
        crawl = self.crawler.settings.get("FRONTIER_CRAWL_NAME") or self.crawler.spider.name
        keys = FrontierKeys(crawl)
        try:
            self.redis = redis_for(self.crawler)
        except RedisUnavailable as exc:
            # The frontier closes the crawl for the same reason; rows still get hashes.
            logger.error("Duplicate checks off: %s", exc)
            return
        self.hashes_key = keys.content_hashes
        self.index = SimhashIndex(
            self.redis,
            keys.neardup,
            max_distance=self.config.max_distance,
            blocks=self.config.blocks,
            bucket_cap=self.config.bucket_cap,
        )

    async def close_spider(self) -> None:
        self.pool.shutdown(wait=True)
        if self.index is not None:
            # Crawl-wide (all workers): buckets of templated sites that hit the cap.
            try:
                overflows = await asyncio.to_thread(lambda: self.index.bucket_overflows)
            except RedisError:
                return
            self.stats.set_value("neardup/bucket_overflows", overflows)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        response = self.checkpoint.response(item)
        if response is None:
            self.stats.inc_value("content/no_body")
            return item
        if item.get("change") in ("not_modified", "gone"):  # no body to look at
            self.stats.inc_value(f"content/{item['change']}")
            return item
        loop = asyncio.get_running_loop()
        url = item["url"]
        prev: DocState | None = response.meta.get(PREV_STATE_META)
        signature, duplicate_of, branch = await loop.run_in_executor(
            self.pool, self._classify, response, item.get("content_type"), url, prev
        )
        item["content_hash"] = signature.content_hash
        item["simhash"] = signature.simhash
        item["duplicate_of"] = duplicate_of
        if prev is not None and branch == "unchanged":
            item["change"] = "unchanged"
            item["content_ref"] = prev.content_ref or None
            item["duplicate_of"] = prev.duplicate_of or None
        elif PREV_STATE_META in response.meta:
            item["change"] = "changed" if prev is not None else "new"
        self.stats.inc_value(f"content/{branch}")
        return item

    # ---- worker thread -------------------------------------------------------------

    def _classify(
        self, response: Response, content_type: str | None, url: str, prev: DocState | None
    ) -> tuple[Signature, str | None, str]:
        """(signature, duplicate_of, stats branch) of one page."""
        signature = content_signature(response, content_type)
        if prev is not None and self._same_as_stored(signature, prev):
            return signature, None, "unchanged"
        if signature.content_hash is None:
            return signature, None, "empty"
        if self.index is None:
            return signature, None, "unchecked"
        try:
            seen = self._hget(signature.content_hash)
            # A page handed back to the frontier (store down) and fetched again
            # finds its own URL: that is not a duplicate.
            if seen and seen != url:
                return signature, seen, "exact_duplicate"
            near, branch = self._near(signature, url)
            original = self._record(signature.content_hash, near or url)
        except RedisError as exc:
            # Dedup is an optimisation: storing a duplicate costs space, losing a
            # body costs data. Without Redis the page counts as unique.
            logger.warning("Duplicate check skipped for %s: Redis error %s", url, exc)
            return signature, None, "redis_error"
        if near is None and original != url:
            # The same content reached another worker in between (pages outside
            # the simhash index: short, textless, or NEARDUP_ENABLED off).
            return signature, original, "exact_duplicate"
        return signature, near, branch

    def _same_as_stored(self, signature: Signature, prev: DocState) -> bool:
        """A re-fetch with the stored copy's hash, or a simhash within the near-duplicate
        threshold of it (a changed counter or date line), is no change."""
        if signature.content_hash == (prev.content_hash or None):
            return True
        if signature.simhash is None or not prev.simhash or not self.config.enabled:
            return False
        if signature.words < self.config.min_words:
            return False
        return hamming(signature.simhash, int(prev.simhash, 16)) <= self.config.max_distance

    def _near(self, signature: Signature, url: str) -> tuple[str | None, str]:
        if signature.simhash is None:
            return None, "unique_no_text"
        if not self.config.enabled or signature.words < self.config.min_words:
            return None, "unique_short"
        assert self.index is not None
        near = self.index.check_and_add(signature.simhash, url)
        if near and near != url:
            return near, "near_duplicate"
        return None, "unique"

    def _hget(self, digest: str) -> str | None:
        value = self.redis.hget(self.hashes_key, digest)
        return value.decode() if isinstance(value, bytes) else value

    def _record(self, digest: str, original: str) -> str:
        """Map the content hash to the page whose body stands for it (the page itself,
        or the stored original it near-duplicates), first writer wins; returns the
        winner. Later exact copies then point straight at a stored body."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.hsetnx(self.hashes_key, digest, original)
        pipe.hget(self.hashes_key, digest)
        _added, value = pipe.execute()
        return value.decode() if isinstance(value, bytes) else str(value)
