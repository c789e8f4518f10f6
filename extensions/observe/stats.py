"""Scrapy's MemoryStatsCollector without its per-attribute-access cost.

Scrapy 2.19's StatsCollector.__getattribute__ wraps its methods to warn about the
deprecated ``spider`` argument, and runs on *every* attribute access: an f-string and
a failed ``_cached_<name>`` lookup (a raised AttributeError) each time, ``self._stats``
inside ``inc_value`` included. Measured here: 11.5 us per ``inc_value`` against 0.6 us
for the plain method; a crawl calls the stats ~100 times a page (per outlink: depth,
source, admission counters), ~1 ms a page on a real manual (bench/README.md, CPU per
page).

This class wraps the same methods with the same warning once, when the collector is
built, and leaves attribute access to ``object``: same values, same warnings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.decorators import _warn_spider_arg

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

# The methods Scrapy's StatsCollector.__getattribute__ wraps (scrapy/statscollectors.py).
WRAPPED = (
    "get_value",
    "get_stats",
    "set_value",
    "set_stats",
    "inc_value",
    "max_value",
    "min_value",
    "clear_stats",
    "open_spider",
    "close_spider",
)


class FastStatsCollector(MemoryStatsCollector):
    """MemoryStatsCollector (spider_stats at close included), its methods wrapped once."""

    __getattribute__ = object.__getattribute__

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        for name in WRAPPED:
            # An instance attribute shadows the class's method for every later lookup.
            setattr(self, name, _warn_spider_arg(getattr(self, name)))
