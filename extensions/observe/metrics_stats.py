"""Scrapy stats as Prometheus metrics, read when Prometheus scrapes (see metrics.py).

Runs on the reactor thread (the endpoint is a Twisted resource), so the stats dict
is never read while the crawl mutates it. Each family has a small, fixed label set:
causes, stages, guards and rejection reasons are named in code, never per host.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from extensions.fetch.errors import CAUSES, STAT_PREFIX
from extensions.observe.metrics_gauges import gauge_metrics

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from extensions.observe.crawl_gauges import CrawlGauges

# Trap guards: URL-shape caps and repeated path segments (URL_MAX_PER_PATTERN, ...).
TRAP_GUARDS = {
    "pattern_cap": "frontier/rejected/pattern_cap",
    "repeated_segments": "frontier/rejected/filter/repeated_segments",
}


class MetricsSource(Protocol):
    """What the collector reads from the metrics extension (metrics.CrawlMetrics), named
    here so this module does not import the extension that imports it."""

    @property
    def stats(self) -> StatsCollector: ...

    @property
    def crawl_counters(self) -> dict[str, int]: ...  # frontier stats hash, all workers

    @property
    def n_items(self) -> int: ...

    @property
    def n_content_dups(self) -> int: ...

    @property
    def gauges(self) -> CrawlGauges | None: ...  # crawl-wide, read from Redis


class StatsView:
    """Prometheus collector over Scrapy stats, evaluated at scrape time."""

    def __init__(self, ext: MetricsSource, extra_stats: tuple[str, ...]) -> None:
        self.ext = ext
        self.extra_stats = extra_stats  # METRICS_EXTRA_STATS

    def collect(self) -> Iterator[Metric]:
        stats: dict[str, Any] = self.ext.stats.get_stats()
        yield from _error_metrics(stats)
        yield from _frontier_metrics(stats, self.ext.crawl_counters)
        yield from _url_metrics(stats)
        yield from _content_metrics(stats, self.ext)
        yield from _recrawl_metrics(stats)
        yield from gauge_metrics(self.ext.gauges)
        extra = GaugeMetricFamily(
            "crawlproj_stat", "Scrapy stats named in METRICS_EXTRA_STATS", labels=["name"]
        )
        for name, value in sorted(stats.items()):
            if _wanted(name, self.extra_stats) and _is_number(value):
                extra.add_metric([name], float(value))
        yield extra


def _num(value: Any) -> float:
    return float(value) if _is_number(value) else 0.0


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _wanted(name: str, patterns: tuple[str, ...]) -> bool:
    return any(name == p or (p.endswith("/") and name.startswith(p)) for p in patterns)


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)


def _labelled(name: str, doc: str, label: str, values: dict[str, float]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=[label])
    for key, value in values.items():
        family.add_metric([key], value)
    return family


def _error_metrics(stats: dict[str, Any]) -> Iterator[Metric]:
    causes = {cause: _num(stats.get(STAT_PREFIX + cause)) for cause in CAUSES}
    # The frontier resolves names before anything is fetched: its failures are DNS errors.
    causes["dns"] += _num(stats.get("frontier/dns/failed"))
    yield _labelled("crawlproj_errors", "Failed fetches and resolutions by cause", "cause", causes)


def _frontier_metrics(stats: dict[str, Any], crawl: dict[str, int]) -> Iterator[Metric]:
    yield _gauge(
        "crawlproj_frontier_queued", "URLs queued crawl-wide", _num(stats.get("frontier/queued"))
    )
    yield _gauge(
        "crawlproj_frontier_leases", "Leases held crawl-wide", _num(stats.get("frontier/leases"))
    )
    expired = crawl.get("lease_expired", _num(stats.get("frontier/redis/lease_expired")))
    yield _counter(
        "crawlproj_lease_expired", "Leases re-delivered after expiry (crawl-wide)", expired
    )
    family = GaugeMetricFamily(
        "crawlproj_frontier_crawl_counter",
        "Frontier counters in Redis, all workers (aggregate with max)",
        labels=["name"],
    )
    for name, value in sorted(crawl.items()):
        family.add_metric([name], float(value))
    yield family
    robots = {
        "admission": _num(stats.get("frontier/rejected/robots_forbidden")),
        "dispatch": _num(stats.get("frontier/dropped/robots_forbidden")),
    }
    yield _labelled("crawlproj_robots_denied", "URLs robots.txt disallowed", "stage", robots)


def _prefixed(stats: dict[str, Any], prefix: str) -> dict[str, float]:
    return {
        name.removeprefix(prefix): _num(value)
        for name, value in stats.items()
        if name.startswith(prefix)
    }


def _url_metrics(stats: dict[str, Any]) -> Iterator[Metric]:
    admitted = _num(stats.get("frontier/admitted"))
    duplicate = _num(stats.get("frontier/duplicate"))
    yield _counter("crawlproj_urls_admitted", "URLs new to the crawl, queued", admitted)
    yield _counter("crawlproj_urls_duplicate", "URLs already seen, not queued", duplicate)
    seen_total = admitted + duplicate
    yield _gauge(
        "crawlproj_url_duplicate_ratio",
        "Share of discovered URLs already seen",
        duplicate / seen_total if seen_total else 0.0,
    )
    rejected = _prefixed(stats, "frontier/rejected/")
    yield _labelled("crawlproj_urls_rejected", "URLs refused at admission", "reason", rejected)
    traps = {guard: _num(stats.get(stat)) for guard, stat in TRAP_GUARDS.items()}
    yield _labelled("crawlproj_trap_guard_hits", "URLs stopped by trap guards", "guard", traps)
    # Generator traps (admission/sprawl.py): a page's ack as sprawl, or settled as new.
    sprawl = _prefixed(stats, "frontier/sprawl/")
    yield _labelled(
        "crawlproj_sprawl_pages",
        "Pages whose links of their own shape were all new (generator traps), by verdict",
        "verdict",
        sprawl,
    )


def _content_metrics(stats: dict[str, Any], ext: MetricsSource) -> Iterator[Metric]:
    # Items carry duplicate_of whatever the content pipeline calls its stats.
    yield _gauge(
        "crawlproj_content_duplicate_ratio",
        "Share of items whose content duplicates another page",
        ext.n_content_dups / ext.n_items if ext.n_items else 0.0,
    )
    outcomes = _prefixed(stats, "content/")
    yield _labelled(
        "crawlproj_content_checks", "Content pipeline outcomes (content/*)", "outcome", outcomes
    )


def _recrawl_metrics(stats: dict[str, Any]) -> Iterator[Metric]:
    visits = _prefixed(stats, "recrawl/visits/")
    yield _labelled(
        "crawlproj_recrawl_visits",
        "Fetches of URLs by what they found: new, changed, unchanged, not_modified",
        "change",
        visits,
    )
    yield _counter(
        "crawlproj_recrawl_fed", "Due URLs sent to the frontier", _num(stats.get("recrawl/fed"))
    )
    yield _gauge(
        "crawlproj_recrawl_due_now",
        "Stored URLs due for a re-visit and not yet claimed",
        _num(stats.get("recrawl/due_now")),
    )
