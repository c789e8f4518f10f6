"""Fetch a few requests through the project's download handler, without the frontier:
`python -m tests.integration.leased_fetch CONFIG OUT` (a real reactor, so a subprocess).

CONFIG is JSON: {"requests": [{"url": ..., "meta": {...}}], "settings": {...}}; the
project's settings are used with the frontier, middlewares, pipelines and extensions off,
so what reaches a server is decided by the handler and the resolver alone. OUT gets
one JSON line per response (url, status, the address connected to) or failure.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response
from twisted.python.failure import Failure

from tests.project_settings import project_settings

BARE = {
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "DOWNLOADER_MIDDLEWARES": {},
    "SPIDER_MIDDLEWARES": {},
    "ITEM_PIPELINES": {},
    "EXTENSIONS": {},
    "RETRY_ENABLED": False,
    "LOG_LEVEL": "INFO",
}


class LeasedFetchSpider(Spider):
    name = "leased_fetch"

    def __init__(self, requests: list[dict[str, Any]], out: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wanted = requests
        self.out = out.open("a", encoding="utf-8")

    async def start(self) -> AsyncIterator[Request]:
        for spec in self.wanted:
            yield Request(
                spec["url"],
                meta=spec.get("meta", {}),
                dont_filter=True,
                callback=self.parse,
                errback=self.failed,
            )

    def parse(self, response: Response) -> None:
        ip = None if response.ip_address is None else str(response.ip_address)
        self._write({"url": response.url, "status": response.status, "ip": ip})

    def failed(self, failure: Failure) -> None:
        self._write({"url": failure.request.url, "error": repr(failure.value)})  # type: ignore[attr-defined]

    def _write(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()


def main(config_path: str, out_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    settings = project_settings({**BARE, **config.get("settings", {})})
    process = CrawlerProcess(settings)
    process.crawl(LeasedFetchSpider, requests=config["requests"], out=Path(out_path))
    process.start()


if __name__ == "__main__":
    main(*sys.argv[1:3])
