"""Stock Scrapy's generic crawler, the baseline of bench_traps.py (not a benchmark itself).

A CrawlSpider that follows every link Scrapy's LinkExtractor finds, kept to the test web's
hosts: what a Scrapy user writes first. bench_traps.py runs it with `scrapy runspider` from
a folder outside the project, so none of the project's settings or components apply.

    scrapy runspider _stock_spider.py -a web=<json with "seeds" and "hosts">
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class StockSpider(CrawlSpider):
    name = "stock"
    rules = (Rule(LinkExtractor(), follow=True),)

    def __init__(self, web: str, *args: Any, **kwargs: Any) -> None:
        spec = json.loads(Path(web).read_text(encoding="utf-8"))
        # Set before CrawlSpider.__init__: Spider keeps start_urls that already exist.
        self.start_urls = list(spec["seeds"])
        self.allowed_domains = list(spec["hosts"])
        super().__init__(*args, **kwargs)
