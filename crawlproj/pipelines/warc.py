"""WarcPipeline: every fetch with a row also goes into a WARC file (WARC_ENABLED).

Per fetch a response record (the HTTP message as received: extensions/warc/records.py
says what the payload is) or a revisit, then the request record naming it
(WARC-Concurrent-To). Revisits follow the content pipelines' decisions:

    304 (change not_modified)         server-not-modified, refers to the URL's last record
    exact duplicate (duplicate_of,    identical-payload-digest, refers to the original's
      no simhash distance), or a      record; only when this crawl wrote that record and
      re-crawl's unchanged 200        its payload digest equals this payload's (content
                                      hashes ignore whitespace, the digest does not):
                                      otherwise a full response
    near duplicate                    NEAR_DUPLICATE_PROFILE: the original, the distance

Originals are remembered crawl-wide in Redis (D:warc_records, in the URL's page shard:
URL -> date, record id, payload digest, target URI), written once the response record
is in its file.

Where a row's record is: not on the row the crawl writes. Scrapy's feed exporter writes
the row as the item leaves the pipelines, and a written row is never amended, while the
file its record is in closes WARC_MAX_SIZE later (thousands of pages) and may still be
lost with its worker. Holding rows until their file is stored would hold their items and
responses in the scraper for as long. So the crawl's rows keep warc_file, warc_offset
and warc_length empty (None), and the truth is the CDXJ index stored beside each file
after the file itself (extensions/warc/index.py): it names only stored records.
`scrapy replay` joins rows to it (final_url + fetched_at = WARC-Target-URI + WARC-Date)
and fills the three fields, so no row ever points at a location that is not stored.

The page's links wait for its records to be written and flushed to the local file
(this pipeline runs before the one that releases the spider's checkpoint). A local
write that fails stops the crawl (reason warc_unavailable, one error line).

Stats: warc/records/response, warc/records/revisit/<identical|not_modified|near>,
warc/no_response, warc/files/<stored|store_failed|recovered>, warc/redis_errors,
warc/failed.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import scrapy
from redis.exceptions import RedisError
from scrapy.exceptions import CloseSpider, NotConfigured
from warcio.recordbuilder import RecordBuilder

from crawlproj.checkpoint import checkpoint_for
from crawlproj.items import PageItem, is_exact_duplicate
from extensions.config import Setting, Table, at_least, matches, read
from extensions.pagestore.protocol import StoreUnavailable
from extensions.state.connection import RedisUnavailable, data_dir_from_settings, redis_for
from extensions.state.page_hashes import PageHash
from extensions.warc.files import worker_name
from extensions.warc.records import (
    IDENTICAL_PROFILE,
    NEAR_DUPLICATE_PROFILE,
    NOT_MODIFIED_PROFILE,
    Exchange,
    Original,
    Revisit,
    exchange_records,
    request_message,
    response_message,
    truncation,
    warc_date,
)
from extensions.warc.storage import open_warc_store, warc_uri
from extensions.warc.writer import WarcWriter

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

CLOSE_REASON = "warc_unavailable"
STAGING_FOLDER = "warc-open"  # under CRAWL_DATA_DIR: files being written (files.py)
_BUILDER = RecordBuilder(warc_version="1.1")  # stateless: record ids, dates, digests
_PROFILE_STATS = {
    IDENTICAL_PROFILE: "identical",
    NOT_MODIFIED_PROFILE: "not_modified",
    NEAR_DUPLICATE_PROFILE: "near",
}


_PREFIX = r"[A-Za-z0-9_.-]{1,64}"


@dataclass(frozen=True)
class WarcConfig:
    enabled: bool
    max_size: int  # bytes: a file is closed once it reaches this
    prefix: str
    uri: str

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> WarcConfig:
        """ValueError names the bad setting."""
        return read(WARC, settings, uri=warc_uri(settings))


WARC = Table(
    WarcConfig,
    Setting("WARC_ENABLED", "enabled", bool),
    Setting("WARC_MAX_SIZE", "max_size", int, at_least(1024)),
    Setting(
        "WARC_PREFIX", "prefix", str, matches(r"[A-Za-z0-9_.-]{1,64}", "1-64 of [A-Za-z0-9_.-]")
    ),
)


def check_warc_settings(settings: BaseSettings) -> None:
    """Crawl preflight: with WARC_ENABLED, the store answers and the staging folder is
    writable (ValueError or StoreUnavailable, one line naming the setting)."""
    config = WarcConfig.from_settings(settings)
    if config.enabled:
        open_warc_store(config.uri, settings).check()
        staging_store(settings).check()


def staging_store(settings: BaseSettings) -> Any:
    """The local staging folder, checked like a file store (its errors name WARC_URI:
    the folder belongs to it)."""
    return open_warc_store("file://" + str(staging_dir(settings)), settings)


def staging_dir(settings: BaseSettings) -> Any:
    return data_dir_from_settings(settings) / STAGING_FOLDER


def plan_revisit(
    item: PageItem, digest: str, lookup: Callable[[str], Original | None]
) -> Revisit | None:
    """The revisit this fetch is (module docstring), or None for a full response."""
    if item.get("status") == 304:
        original = lookup(item["url"])
        target = original.url if original is not None else item["final_url"]
        return Revisit(NOT_MODIFIED_PROFILE, target, original)
    duplicate_of = item.get("duplicate_of")
    if item.get("change") == "unchanged":
        candidates = [item["url"], duplicate_of]
    elif is_exact_duplicate(item):
        candidates = [duplicate_of]
    elif duplicate_of:
        original = lookup(duplicate_of)
        target = original.url if original is not None else duplicate_of
        distance, resemblance = item.get("simhash_distance"), item.get("resemblance")
        return Revisit(NEAR_DUPLICATE_PROFILE, target, original, distance, resemblance)
    else:
        return None
    for url in candidates:
        original = lookup(url) if url else None
        if original is not None and original.payload_digest == digest:
            return Revisit(IDENTICAL_PROFILE, original.url, original)
    return None


def exchange_of(item: PageItem, response: Response) -> Exchange:
    assert response.request is not None  # a downloaded response, tied to its request
    request, request_body = request_message(response.request)
    return Exchange(
        url=response.url,
        date=warc_date(item["fetched_at"]),
        ip=response.meta.get("frontier_ip") or item.get("ip"),
        request=request,
        request_body=request_body,
        response=response_message(response),
        body=response.body,
        content_type=item.get("content_type"),
        truncated=truncation(response),
    )


# Settings that shape what a file holds, named in its warcinfo record.
WARCINFO_SETTINGS = (
    "FRONTIER_DELAY",
    "DOWNLOAD_MAXSIZE",
    "CONTENT_TYPES_WANTED",
    "NEARDUP_ENABLED",
    "NEARDUP_MAX_DISTANCE",
    "RECRAWL_ENABLED",
    "WARC_MAX_SIZE",
)


def warcinfo(settings: BaseSettings, crawl: str) -> dict[str, str]:
    """The warcinfo record's fields: who wrote the file, how, and under which rules."""
    robots = "obey" if settings.getbool("ROBOTS_ENABLED") else "ignore"
    knobs = WARCINFO_SETTINGS
    return {
        "software": f"crawlproj (Scrapy {scrapy.__version__}, "
        f"warcio {importlib.metadata.version('warcio')})",
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/"
        "warc-format/warc-1.1/",
        "isPartOf": crawl,
        "hostname": socket.gethostname(),
        "http-header-user-agent": str(settings.get("USER_AGENT")),
        "robots": f"{robots} (RFC 9309, product token {settings.get('ROBOTS_USER_AGENT')})",
        "crawlproj-settings": "; ".join(f"{k}={settings.get(k)}" for k in knobs),
    }


class WarcPipeline:
    """Writes each fetch's records; files rotate, are stored and indexed (writer.py)."""

    def __init__(self, crawler: Crawler, config: WarcConfig) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = config
        self.checkpoint = checkpoint_for(crawler)
        settings = crawler.settings
        self.store = open_warc_store(config.uri, settings)
        self.staging = staging_dir(settings)
        self.worker = worker_name(settings.get("SEEN_WORKER_ID") or "")
        self.writer: WarcWriter | None = None
        self.originals: PageHash | None = None
        self.down = False
        self._closing: asyncio.Future[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcPipeline:
        config = WarcConfig.from_settings(crawler.settings)
        if not config.enabled:
            raise NotConfigured("WARC_ENABLED is off")
        return cls(crawler, config)

    async def open_spider(self) -> None:
        assert self.crawler.spider is not None
        settings = self.crawler.settings
        crawl = settings.get("FRONTIER_CRAWL_NAME") or self.crawler.spider.name
        try:
            await asyncio.to_thread(self.store.check)
            await asyncio.to_thread(staging_store(settings).check)
        except StoreUnavailable as exc:
            logger.error("WARC store unavailable, stopping the crawl: %s", exc)
            raise CloseSpider(CLOSE_REASON) from None
        writer = WarcWriter(
            self.store,
            self.staging,
            self.config.prefix,
            self.worker,
            self.config.max_size,
            warcinfo(settings, crawl),
        )
        await asyncio.to_thread(writer.start)
        self.writer = writer
        try:
            # Per URL: in the URL's page shard (state/page_hashes.py).
            self.originals = PageHash(
                redis_for(self.crawler), crawl, lambda pages: pages.warc_records
            )
        except RedisUnavailable as exc:
            logger.error("WARC revisits off (every fetch a full record): %s", exc)
        logger.info("WARC files to %s (staged in %s)", self.store.uri, self.staging)

    async def close_spider(self) -> None:
        writer = self.writer
        if writer is None:
            return
        await asyncio.to_thread(writer.close)
        for name, count in writer.counts.items():
            if count:
                self.stats.set_value(f"warc/files/{name}", count)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem) or self.writer is None or self.down:
            return item
        response = self.checkpoint.response(item)
        if response is None:
            self.stats.inc_value("warc/no_response")
            return item
        exchange = exchange_of(item, response)
        loop = asyncio.get_running_loop()
        try:
            revisit = await loop.run_in_executor(
                self.writer.write_pool, self._write, item, exchange
            )
        except OSError as exc:
            self._give_up(f"WARC file in {self.staging} not writable: {exc}")
            return item
        kind = "response" if revisit is None else f"revisit/{_PROFILE_STATS[revisit.profile]}"
        self.stats.inc_value(f"warc/records/{kind}")
        return item

    # ---- write thread ------------------------------------------------------------------

    def _write(self, item: PageItem, exchange: Exchange) -> Revisit | None:
        assert self.writer is not None
        revisit = plan_revisit(item, exchange.payload_digest, self._lookup)
        records = exchange_records(_BUILDER, exchange, revisit)
        self.writer.write(records)
        if revisit is None:
            record_id = records[0].rec_headers.get_header("WARC-Record-ID")
            original = Original(exchange.url, exchange.date, record_id, exchange.payload_digest)
            self._remember(item["url"], original)
        return revisit

    def _lookup(self, url: str) -> Original | None:
        if self.originals is None:
            return None
        try:
            value = self.originals.get(url)
        except RedisError:
            self.stats.inc_value("warc/redis_errors")
            return None
        return None if value is None else Original.decode(value)

    def _remember(self, url: str, original: Original) -> None:
        if self.originals is None:
            return
        try:
            self.originals.set(url, original.encode())
        except RedisError:
            self.stats.inc_value("warc/redis_errors")

    def _give_up(self, reason: str) -> None:
        self.stats.inc_value("warc/failed")
        if self.down:
            return
        self.down = True
        logger.error("WARC output failed, stopping the crawl: %s", reason)
        engine = getattr(self.crawler, "_engine", None)
        if engine is not None:
            # Not awaited: closing waits for this very item to leave the scraper.
            self._closing = asyncio.ensure_future(engine.close_spider_async(reason=CLOSE_REASON))
