"""A one-line crawl summary at the end of every crawl (and a JSON copy for scripts)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class CrawlSummary:
    """Counts pages, hosts and errors; logs them at close and writes CRAWL_SUMMARY_FILE."""

    def __init__(self, crawler: Crawler, summary_file: str) -> None:
        self.crawler = crawler
        self.summary_file = summary_file
        self.hosts: set[str] = set()
        self.started = time.monotonic()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlSummary:
        ext = cls(crawler, crawler.settings.get("CRAWL_SUMMARY_FILE") or "")
        crawler.signals.connect(ext.response_received, signal=signals.response_received)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def response_received(self, response: Response, **_: Any) -> None:
        host = response.url.split("/", 3)[2] if "://" in response.url else ""
        self.hosts.add(host)

    def summary(self, reason: str) -> dict[str, Any]:
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        errors = sum(v for k, v in stats.items() if k.startswith("crawlproj/errors/"))
        return {
            "reason": reason,
            "pages": stats.get("item_scraped_count", 0),
            "hosts": len(self.hosts),
            "errors": errors,
            "responses": stats.get("response_received_count", 0),
            "elapsed_s": round(time.monotonic() - self.started, 2),
        }

    def spider_closed(self, spider: Spider, reason: str) -> None:
        summary = self.summary(reason)
        logger.info(
            "Crawl summary: %(pages)d pages from %(hosts)d hosts, %(errors)d errors, "
            "%(elapsed_s).1fs (%(reason)s)",
            summary,
        )
        if self.summary_file:
            Path(self.summary_file).write_text(json.dumps(summary, indent=2) + "\n")
