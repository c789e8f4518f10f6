"""`scrapy crawl`, with a preflight that turns bad input into one line, not a traceback.

Scrapy logs a traceback for any exception raised while a crawler starts. Operators
need the reason and the fix instead, so the inputs that are checkable up front are
checked here before the reactor runs: every component's settings table (the same
tables the components read, extensions/config.py), the seeds, the blocklist, a shared
REDIS_URL and the page store.
The exit status is non-zero when the crawl did not finish normally.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import NotConfigured, UsageError

from crawlproj.page_tokens import PAGE_TOKENS
from crawlproj.pipelines.soft404 import SOFT404
from crawlproj.pipelines.store import STORE, check_content_settings
from crawlproj.pipelines.warc import WARC, check_warc_settings
from crawlproj.seeds import SeedError, read_seed_arg
from extensions.admission.admit import URL_FILTER
from extensions.admission.bloom import SEEN
from extensions.admission.budgets import TRAPS
from extensions.admission.facet_sidebar import SIDEBAR
from extensions.admission.filters import compile_block_rules
from extensions.admission.new_items import NEW_ITEMS
from extensions.admission.noise import NOISE
from extensions.admission.politeness_key import HOST_IP_KEYS
from extensions.admission.priorities import FRONT_QUEUES, PRIORITIES, priority_weights
from extensions.admission.prioritizer import PRIORITY
from extensions.admission.recent import RECENT
from extensions.admission.sprawl import SPRAWL
from extensions.config import FLAG, STRINGS, Setting, Table, at_least
from extensions.content.neardup_config import NEARDUP
from extensions.dns.cache import DNS
from extensions.fetch.content_type import CONTENT_TYPES
from extensions.fetch.handler import HANDLER
from extensions.frontier.config import FRONTIER, LEASE, SCHEDULER
from extensions.observe.metrics import METRICS
from extensions.observe.report import REPORT
from extensions.pagestore.protocol import StoreUnavailable
from extensions.recrawl.state import RECRAWL, SCHEDULE
from extensions.robots.rules import ROBOTS
from extensions.state.connection import REDIS, RedisUnavailable, connect_url

if TYPE_CHECKING:
    import argparse
    from typing import Any

    from scrapy.settings import BaseSettings

# Close reasons that mean the crawl did its work.
_OK_REASONS = frozenset({"finished", "closespider_pagecount", "closespider_itemcount"})

# Numbers and switches of crawlproj/settings.py that no component table reads: Scrapy's
# own (its getint/getbool would fail mid-start with a traceback) and switches a component
# reads alone before it builds anything.
ELSEWHERE: Table[dict[str, Any]] = Table(
    dict,
    *(
        Setting(name, name, FLAG)
        for name in (
            "ROBOTS_ENABLED",
            "AUTOTHROTTLE_ENABLED",
            "ROBOTSTXT_OBEY",
            "HTTPERROR_ALLOW_ALL",
            "DEPTH_STATS_VERBOSE",
            "TELNETCONSOLE_ENABLED",
            "REMOTE_CONTROL_ENABLED",
        )
    ),
    Setting("URL_BLOCKLIST", "URL_BLOCKLIST", STRINGS),
    Setting("DOWNLOAD_DELAY", "DOWNLOAD_DELAY", float, at_least(0)),
    *(
        Setting(name, name, int, at_least(least))
        for name, least in (
            ("CONCURRENT_REQUESTS", 1),
            ("CONCURRENT_REQUESTS_PER_DOMAIN", 1),
            ("CONCURRENT_ITEMS", 1),
            ("DOWNLOAD_MAXSIZE", 0),
            ("DOWNLOAD_WARNSIZE", 0),
            ("REDIRECT_MAX_TIMES", 0),
            ("RETRY_TIMES", 0),
            ("DEPTH_LIMIT", 0),
        )
    ),
)

# Every table, in the order a crawl reads them.
TABLES: tuple[Table[Any], ...] = (
    REDIS,
    PRIORITIES,
    LEASE,
    FRONTIER,
    HOST_IP_KEYS,
    SCHEDULER,
    URL_FILTER,
    PAGE_TOKENS,
    PRIORITY,
    TRAPS,
    SPRAWL,
    SIDEBAR,
    NEW_ITEMS,
    NOISE,
    DNS,
    SEEN,
    RECENT,
    ROBOTS,
    SCHEDULE,
    RECRAWL,
    HANDLER,
    CONTENT_TYPES,
    NEARDUP,
    SOFT404,
    STORE,
    WARC,
    METRICS,
    REPORT,
    ELSEWHERE,
)


class StartupError(RuntimeError):
    """A problem found before the crawl starts; its message says what to fix."""


def check_settings(settings: BaseSettings) -> None:
    """Every table's settings; ValueError names the first bad one."""
    # Settings that name a front queue are checked against the weights' count.
    context = {FRONT_QUEUES: len(priority_weights(settings))}
    for table in TABLES:
        table.check(settings, context)


def preflight(settings: BaseSettings, spider_args: dict[str, str]) -> None:
    try:
        check_settings(settings)
        if "seeds" in spider_args:  # none: resume what the frontier holds
            read_seed_arg(
                spider_args["seeds"], report=False, max_length=settings.getint("URL_MAX_LENGTH")
            )
        compile_block_rules(settings.getlist("URL_BLOCKLIST"))
        if settings.get("REDIS_URL"):
            connect_url(settings.get("REDIS_URL")).close()
        check_content_settings(settings)  # the page store itself answers
        check_warc_settings(settings)  # so does the WARC store, when WARC_ENABLED
    except (SeedError, RedisUnavailable, StoreUnavailable, ValueError, NotConfigured) as exc:
        raise StartupError(str(exc)) from None


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("run exactly one spider: scrapy crawl web -a seeds=FILE")
        assert self.settings is not None and self.crawler_process is not None
        try:
            preflight(self.settings, opts.spargs)
        except StartupError as exc:
            print(f"crawlproj: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        crawler = self._create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        reason = crawler.stats.get_value("finish_reason") if crawler.stats else None
        if self.crawler_process.bootstrap_failed or reason not in _OK_REASONS:
            if reason:
                print(f"crawlproj: crawl ended with reason {reason!r}", file=sys.stderr)
            self.exitcode = 1
