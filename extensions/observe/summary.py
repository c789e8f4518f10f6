"""A one-line crawl summary at the end of every crawl (and a JSON copy for scripts)."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


# Hosts counted exactly; past this many, a HyperLogLog takes over, so a broad crawl's summary
# costs 16 KB instead of a set of every host it ever answered (~100 B each). Kept above
# 5 x its registers: the raw estimate is unbiased only there (between linear counting's
# range and 5 x, HyperLogLog++ needs an empirical bias table).
EXACT_HOSTS = 100_000
HLL_BITS = 14  # 16,384 registers: ~0.8% standard error


class DistinctCount:
    """The number of distinct strings added: exact up to EXACT_HOSTS, then a HyperLogLog."""

    def __init__(self) -> None:
        self.exact: set[str] | None = set()
        self.registers = bytearray(1 << HLL_BITS)

    def add(self, value: str) -> None:
        h = int.from_bytes(hashlib.blake2b(value.encode(), digest_size=8).digest(), "big")
        index, rest = h >> (64 - HLL_BITS), h & ((1 << (64 - HLL_BITS)) - 1)
        rank = (64 - HLL_BITS) - rest.bit_length() + 1  # position of the first 1 bit
        if rank > self.registers[index]:
            self.registers[index] = rank
        if self.exact is not None:
            self.exact.add(value)
            if len(self.exact) > EXACT_HOSTS:
                self.exact = None  # the registers already hold every value added

    def __len__(self) -> int:
        if self.exact is not None:
            return len(self.exact)
        m = len(self.registers)
        estimate = 0.7213 / (1 + 1.079 / m) * m * m / sum(2.0**-r for r in self.registers)
        zeros = self.registers.count(0)
        if estimate <= 2.5 * m and zeros:  # small range: linear counting is the better guess
            estimate = m * math.log(m / zeros)
        return round(estimate)


# Dispatch drops (frontier/dropped/<why>) of URLs lost to an unreachable server, not to a
# crawl decision: a down IP (outcome.lua gone_down) or an origin whose robots.txt stayed
# unavailable (ROBOTS_MAX_ERROR_RETRIES). "0 errors" alone hid them.
GIVEN_UP = ("ip_down", "robots_unavailable")


class CrawlSummary:
    """Counts pages, hosts and errors; logs them at close and writes CRAWL_SUMMARY_FILE."""

    def __init__(self, crawler: Crawler, summary_file: str) -> None:
        self.crawler = crawler
        self.summary_file = summary_file
        self.hosts = DistinctCount()
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
            "given_up": sum(stats.get(f"frontier/dropped/{why}", 0) for why in GIVEN_UP),
            "responses": stats.get("response_received_count", 0),
            "elapsed_s": round(time.monotonic() - self.started, 2),
        }

    def spider_closed(self, spider: Spider, reason: str) -> None:
        summary = self.summary(reason)
        logger.info(
            "Crawl summary: %(pages)d pages from %(hosts)d hosts, %(errors)d errors, "
            "%(given_up)d URLs given up (server unreachable), "
            "%(elapsed_s).1fs (%(reason)s)",
            summary,
        )
        if self.summary_file:
            Path(self.summary_file).write_text(json.dumps(summary, indent=2) + "\n")
