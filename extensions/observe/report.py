"""The crawl report: an HTML page with charts at the end of every crawl, and on demand.

At close the extension writes two files side by side: `<name>.json` (everything the
report shows: final Scrapy stats plus the timeline, gaps and hosts collected in
bounded memory, see report_data.py) and `<name>.html` (self-contained, report_html.py).
Where: CRAWL_REPORT_PATH when set; else beside the first local feed
(`-O out/items.jsonl` -> `out/items-report.html`); else CRAWL_DATA_DIR/<spider>-report.html.

On demand, from a saved JSON (e.g. after restyling, or for an older crawl):

    python -m extensions.observe.report --stats out/items-report.json --out report.html
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.exceptions import NotConfigured

from extensions.config import Setting, Table, at_least, read
from extensions.fetch.gaps import GapTracker, request_ip
from extensions.observe.report_data import GapStats, HostCounts, Timeline, json_safe
from extensions.observe.report_html import render

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

REPORT_VERSION = 1
SAVED_HOSTS = 200  # hosts kept in the JSON (the page shows the top 15)


@dataclass(frozen=True)
class ReportSettings:
    enabled: bool
    path: str  # "" = beside the first local feed, else in CRAWL_DATA_DIR
    delay: float  # the configured politeness gap, drawn on the gap chart


REPORT = Table(
    ReportSettings,
    Setting("CRAWL_REPORT_ENABLED", "enabled", bool),
    Setting("CRAWL_REPORT_PATH", "path", str),
    Setting("FRONTIER_DELAY", "delay", float, at_least(0)),
)


def report_path(settings: BaseSettings, spider_name: str, job: str = "") -> Path:
    """Where the HTML goes (the JSON is the same path with a .json suffix). `job` (a
    scrapyd job id) keeps jobs sharing one CRAWL_DATA_DIR from overwriting each other."""
    explicit = read(REPORT, settings).path
    if explicit:
        return Path(explicit).expanduser().resolve()
    feed = first_local_feed(settings.getdict("FEEDS"))
    if feed is not None:
        return feed.parent / f"{feed.stem}-report.html"
    from extensions.state.connection import data_dir_from_settings

    name = f"{spider_name}-{job}" if job else spider_name
    return data_dir_from_settings(settings) / f"{name}-report.html"


def first_local_feed(feeds: dict[Any, Any]) -> Path | None:
    """The first feed written to a local file (file:// or a plain path), if any;
    URIs with %(placeholders)s are skipped (their file name is not known yet)."""
    for uri in feeds:
        text = str(uri)
        if "%(" in text:
            continue
        parts = urlsplit(text)
        if parts.scheme == "file":
            return Path(parts.path).resolve()
        if parts.scheme == "" or len(parts.scheme) == 1:  # a path (or a drive letter)
            return Path(text).expanduser().resolve()
    return None


class CrawlReport:
    """Scrapy extension: collects during the crawl, writes the report at close."""

    def __init__(self, crawler: Crawler, delay: float) -> None:
        assert crawler.stats is not None
        self.crawler = crawler
        self.stats = crawler.stats
        self.delay = delay
        self.started = time.time()
        self.timeline = Timeline(t0=self.started)
        self.gap_stats = GapStats(delay=delay)
        self.tracker = GapTracker()
        self.hosts = HostCounts()
        self.items = 0
        self.content_duplicates = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlReport:
        try:
            config = read(REPORT, crawler.settings)
        except ValueError as exc:
            raise NotConfigured(str(exc)) from None
        if not config.enabled:
            raise NotConfigured  # switched off on purpose: nothing to log
        ext = cls(crawler, config.delay)
        connect = crawler.signals.connect
        connect(ext.engine_started, signal=signals.engine_started)
        connect(ext.response_downloaded, signal=signals.response_downloaded)
        connect(ext.request_reached, signal=signals.request_reached_downloader)
        connect(ext.request_left, signal=signals.request_left_downloader)
        connect(ext.item_scraped, signal=signals.item_scraped)
        connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def engine_started(self) -> None:
        self.started = time.time()
        self.timeline = Timeline(t0=self.started)

    def response_downloaded(self, response: Response, request: Request, **_: Any) -> None:
        self.timeline.add(time.time())
        self.hosts.add(urlsplit(response.url).hostname or "")

    def request_reached(self, request: Request, **_: Any) -> None:
        start = self.tracker.started(request_ip(request), time.monotonic())
        if start.overlap:
            self.gap_stats.overlaps += 1
        elif start.gap is not None:
            self.gap_stats.add(start.gap)

    def request_left(self, request: Request, **_: Any) -> None:
        self.tracker.ended(request_ip(request), time.monotonic())

    def item_scraped(self, item: Any, **_: Any) -> None:
        self.items += 1
        if item.get("duplicate_of"):
            self.content_duplicates += 1

    def data(self, spider: Spider, reason: str) -> dict[str, Any]:
        finished = time.time()
        return {
            "report_version": REPORT_VERSION,
            "spider": spider.name,
            "reason": reason,
            "started_at": _iso(self.started),
            "finished_at": _iso(finished),
            "elapsed_s": round(finished - self.started, 3),
            "delay_s": self.delay,
            "timeline": self.timeline.to_json(),
            "gaps": self.gap_stats.to_json(),
            "hosts": self.hosts.top(SAVED_HOSTS),
            "items": self.items,
            "content_duplicates": self.content_duplicates,
            "stats": json_safe(self.stats.get_stats()),
        }

    def spider_closed(self, spider: Spider, reason: str) -> None:
        # scrapyd passes its job id to the spider as the `_job` argument.
        job = str(getattr(spider, "_job", "") or "")
        path = report_path(self.crawler.settings, spider.name, job)
        try:
            write_report(self.data(spider, reason), path)
        except Exception as exc:
            self.stats.inc_value("report/write_failed")
            logger.error("Crawl report not written to %s: %r", path, exc)
            return
        self.stats.inc_value("report/written")
        logger.info("Crawl report: %s", path)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def write_report(data: dict[str, Any], html_path: Path) -> None:
    """Write `html_path` and its JSON data beside it (same name, .json)."""
    html_path.parent.mkdir(parents=True, exist_ok=True)
    html_path.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    html_path.write_text(render(data), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m extensions.observe.report",
        description="Rebuild a crawl report (HTML) from the JSON a crawl saved beside it.",
    )
    parser.add_argument("--stats", required=True, help="the report's JSON (<name>-report.json)")
    parser.add_argument("--out", required=True, help="HTML file to write")
    args = parser.parse_args(argv)
    try:
        data = json.loads(Path(args.stats).read_text())
    except (OSError, ValueError) as exc:
        print(f"report: cannot read {args.stats}: {exc}", file=sys.stderr)
        return 2
    if not isinstance(data, dict) or data.get("report_version") != REPORT_VERSION:
        print(f"report: {args.stats} is not a crawl report JSON (version 1)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(data), encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
