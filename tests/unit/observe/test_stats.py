"""FastStatsCollector keeps MemoryStatsCollector's values and warnings, without Scrapy's
per-access __getattribute__."""

from __future__ import annotations

import warnings

import pytest
from scrapy import Spider
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.statscollectors import MemoryStatsCollector, StatsCollector
from scrapy.utils.test import get_crawler

from extensions.observe.stats import WRAPPED, FastStatsCollector


def exercise(stats: StatsCollector) -> dict[str, object]:
    stats.open_spider()
    stats.set_value("a", 3)
    for _ in range(5):
        stats.inc_value("n")
    stats.inc_value("n", 2, start=10)
    stats.inc_value("fresh", 2, start=10)
    stats.max_value("m", 4)
    stats.max_value("m", 2)
    stats.min_value("low", 4)
    stats.min_value("low", 1)
    seen = dict(stats.get_stats())
    seen["get"] = stats.get_value("n"), stats.get_value("missing", "default")
    return seen


def test_same_values_as_scrapys_collector() -> None:
    ours, scrapy_s = FastStatsCollector(get_crawler()), MemoryStatsCollector(get_crawler())
    assert exercise(ours) == exercise(scrapy_s)
    assert ours.get_value("n") == 7 and ours.get_value("fresh") == 12


def test_close_keeps_the_spider_stats() -> None:
    crawler = get_crawler(Spider)
    crawler.spider = crawler._create_spider("s")
    stats = FastStatsCollector(crawler)
    stats.open_spider()
    stats.inc_value("pages")
    stats.close_spider(reason="finished")
    assert stats.spider_stats == {"s": {"pages": 1}}


def test_the_spider_argument_still_warns() -> None:
    stats = FastStatsCollector(get_crawler())
    with pytest.warns(ScrapyDeprecationWarning, match=r"inc_value\(\) is deprecated"):
        stats.inc_value("k", spider=None)
    with pytest.warns(ScrapyDeprecationWarning, match=r"get_value\(\) is deprecated"):
        stats.get_value("k", None, None)  # positional, too
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats.inc_value("k")  # no spider argument: no warning


def test_methods_are_wrapped_once_not_per_access() -> None:
    stats = FastStatsCollector(get_crawler())
    first = stats.inc_value
    stats.inc_value("k")
    assert stats.inc_value is first
    # Scrapy's collector caches its wrappers as _cached_<name> on first access.
    assert not [k for k in vars(stats) if k.startswith("_cached_")]
    assert set(WRAPPED) <= set(vars(stats))
    assert type(stats).__getattribute__ is object.__getattribute__
