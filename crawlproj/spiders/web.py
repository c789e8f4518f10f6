"""The generic `web` spider: seeds -> follow links -> one PageItem per fetched document."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse

from crawlproj.directives import page_directives
from crawlproj.items import PageItem
from crawlproj.links import extract_links
from crawlproj.seeds import SeedLine, read_seed_arg
from extensions.robots_cache import parse_sitemap


class WebSpider(scrapy.Spider):
    """Crawl outward from the seeds; the scheduler decides what is fetched when.

    Usage: scrapy crawl web -a seeds=FILE | -a seeds=URL1,URL2 [-O items.jsonl]
    """

    name = "web"

    def __init__(self, seeds: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Read and validated up front: a bad seeds argument stops the crawl before
        # any component opens (the crawl command turns SeedError into one line).
        self.seed_lines: list[SeedLine] = read_seed_arg(seeds)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for seed in self.seed_lines:
            yield scrapy.Request(seed.url, callback=self.parse, errback=self.on_error)

    def parse(self, response: Response) -> Iterator[PageItem | scrapy.Request]:
        directives = page_directives(response, self.robots_token)
        item = self.page_item(response)
        item["noindex"], item["canonical"] = directives.noindex, directives.canonical
        yield item
        if not isinstance(response, TextResponse) or not _is_html(response):
            self.crawler.stats.inc_value("crawlproj/pages/not_html")
            return
        if directives.nofollow:
            self.crawler.stats.inc_value("crawlproj/pages/nofollow")
            return
        for url in extract_links(response):
            yield scrapy.Request(url, callback=self.parse, errback=self.on_error)

    def parse_sitemap(self, response: Response) -> Iterator[PageItem | scrapy.Request]:
        """Sitemaps (from robots.txt): their page URLs enter the frontier at the
        lowest priority, nested sitemaps too; <lastmod> rides along in meta."""
        yield self.page_item(response)
        try:
            pages, nested = parse_sitemap(response.body, response.url)
        except ValueError as exc:  # too large, corrupt gzip, not a sitemap
            self.logger.warning("Sitemap %s skipped: %s", response.url, exc)
            self.crawler.stats.inc_value("crawlproj/sitemaps/invalid")
            return
        lowest = {"frontier_priority": self.lowest_priority}
        for url in nested:
            yield scrapy.Request(url, callback=self.parse_sitemap, meta=dict(lowest))
        for url, lastmod in pages:
            meta = {**lowest, "lastmod": lastmod} if lastmod else dict(lowest)
            yield scrapy.Request(url, callback=self.parse, errback=self.on_error, meta=meta)
        self.crawler.stats.inc_value("crawlproj/sitemaps/urls", len(pages))

    @property
    def robots_token(self) -> str:
        return self.crawler.settings.get("ROBOTS_USER_AGENT") or "crawlproj"

    @property
    def lowest_priority(self) -> int:
        return len(self.crawler.settings.getlist("FRONTIER_PRIORITY_WEIGHTS", [0] * 5)) - 1

    def page_item(self, response: Response) -> PageItem:
        redirects = response.meta.get("redirect_urls") or []
        return PageItem(
            url=redirects[0] if redirects else response.url,
            final_url=response.url,
            status=response.status,
            fetched_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
            depth=response.meta.get("depth", 0),
            ip=str(response.ip_address) if response.ip_address else None,
            content_type=_content_type(response),
            length=len(response.body),
        )

    def on_error(self, failure: Any) -> None:
        # Counted by cause; the request itself is logged by Scrapy's core.
        self.crawler.stats.inc_value(f"crawlproj/errors/{failure.type.__name__}")


def _content_type(response: Response) -> str | None:
    raw = response.headers.get(b"Content-Type")
    if not raw:
        return None
    return raw.decode("latin-1").split(";", 1)[0].strip().lower() or None


def _is_html(response: Response) -> bool:
    content_type = _content_type(response)
    return content_type is None or content_type in ("text/html", "application/xhtml+xml")
