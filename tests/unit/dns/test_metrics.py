"""The resolver's stats reach Prometheus (METRICS_EXTRA_STATS exports "dns/" by default)."""

from __future__ import annotations

from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

import crawlproj.settings
from extensions.observe.metrics_stats import StatsView


class Source:
    def __init__(self, stats: MemoryStatsCollector) -> None:
        self.stats = stats
        self.crawl_counters: dict[str, int] = {}
        self.n_items = self.n_content_dups = 0
        self.gauges = None  # no read from Redis yet


def test_dns_stats_are_exported_by_default() -> None:
    stats = MemoryStatsCollector(get_crawler())
    for name, value in (
        ("dns/lookups", 4),
        ("dns/cache/local_hit", 40),
        ("dns/refused/private", 1),
    ):
        stats.set_value(name, value)
    stats.set_value("frontier/queued", 7)
    view = StatsView(Source(stats), tuple(crawlproj.settings.METRICS_EXTRA_STATS))
    family = next(m for m in view.collect() if m.name == "crawlproj_stat")
    exported = {s.labels["name"]: s.value for s in family.samples}
    assert exported == {"dns/cache/local_hit": 40, "dns/lookups": 4, "dns/refused/private": 1}
