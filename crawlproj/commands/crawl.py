"""`scrapy crawl`, with a preflight that turns bad input into one line, not a traceback.

Scrapy logs a traceback for any exception raised while a crawler starts. Operators
need the reason and the fix instead, so the inputs that are checkable up front
(seeds, DNS_HOSTS_MAP, a shared REDIS_URL, the page store) are checked here before
the reactor runs.
The exit status is non-zero when the crawl did not finish normally.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import NotConfigured, UsageError

import crawlproj.settings
from crawlproj.pipelines.store import check_content_settings
from crawlproj.seeds import SeedError, read_seed_arg
from extensions.admission.admit import url_filter_from_settings
from extensions.admission.filters import compile_block_rules
from extensions.admission.seen import SeenConfig
from extensions.config import check_types
from extensions.dns.cache import DnsSettings
from extensions.frontier.config import frontier_config, scheduler_settings
from extensions.pagestore.protocol import StoreUnavailable
from extensions.recrawl.state import RecrawlConfig
from extensions.state.connection import RedisUnavailable, connect_url

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import BaseSettings

# Close reasons that mean the crawl did its work.
_OK_REASONS = frozenset({"finished", "closespider_pagecount", "closespider_itemcount"})


class StartupError(RuntimeError):
    """A problem found before the crawl starts; its message says what to fix."""


def preflight(settings: BaseSettings, spider_args: dict[str, str]) -> None:
    try:
        check_types(settings, crawlproj.settings)
        if "seeds" in spider_args:  # none: resume what the frontier holds
            read_seed_arg(spider_args["seeds"], report=False)
        DnsSettings.from_settings(settings)
        url_filter_from_settings(settings)
        compile_block_rules(settings.getlist("URL_BLOCKLIST"))
        SeenConfig.from_settings(settings)
        priorities = frontier_config(settings).priorities
        scheduler_settings(settings, priorities)
        RecrawlConfig.from_settings(settings, priorities)
        if settings.get("REDIS_URL"):
            connect_url(settings.get("REDIS_URL")).close()
        check_content_settings(settings)  # NEARDUP_*, PAGESTORE_* and the store itself
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
