"""Crawl-wide gauges (crawl_gauges.py) as Prometheus families, at scrape time.

Every label set is small and fixed by the crawl's shape: priorities, lanes, shards x
Bloom generations, refusal reasons and failure causes named in code, never per host or
IP. Every worker exports the same crawl-wide values: aggregate with max().
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric

if TYPE_CHECKING:
    from extensions.observe.crawl_gauges import CrawlGauges


def _labelled(name: str, doc: str, label: str, values: dict[str, float]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=[label])
    for key, value in values.items():
        family.add_metric([key], value)
    return family


def gauge_metrics(gauges: CrawlGauges | None) -> Iterator[Metric]:
    """Nothing before the first read from Redis (a missing series, not a false zero)."""
    if gauges is None:
        return
    yield from _queue_metrics(gauges)
    yield from _bloom_metrics(gauges)
    yield from _admission_metrics(gauges)
    yield from _recrawl_metrics(gauges)


def _queue_metrics(gauges: CrawlGauges) -> Iterator[Metric]:
    front = {str(p): float(n) for p, n in enumerate(gauges.front_queues)}
    yield _labelled(
        "crawlproj_queue_front", "URLs in each front queue, crawl-wide", "priority", front
    )
    known = gauges.back_lanes is not None
    yield GaugeMetricFamily(
        "crawlproj_queue_back_lanes_known",
        "1 when the back-queue lane counters are exact (0: queued before them, until drained)",
        value=float(known),
    )
    if gauges.back_lanes is not None:
        lanes = {str(lane): float(n) for lane, n in enumerate(gauges.back_lanes)}
        yield _labelled(
            "crawlproj_queue_back_lane", "URLs in back-queue lanes, crawl-wide", "lane", lanes
        )


def _bloom_metrics(gauges: CrawlGauges) -> Iterator[Metric]:
    labels = ["shard", "generation"]
    fill = GaugeMetricFamily(
        "crawlproj_bloom_generation_fill",
        "URL-seen Bloom generation: keys inserted / capacity",
        labels=labels,
    )
    fp_rate = GaugeMetricFamily(
        "crawlproj_bloom_generation_fp_rate",
        "URL-seen Bloom generation: estimated false-positive rate (1 - exp(-k n / m))^k",
        labels=labels,
    )
    inserted = GaugeMetricFamily(
        "crawlproj_bloom_generation_inserted",
        "URL-seen Bloom generation: keys inserted",
        labels=labels,
    )
    for g in gauges.bloom:
        names = [str(g.shard), str(g.generation)]
        fill.add_metric(names, g.fill)
        fp_rate.add_metric(names, g.fp_rate)
        inserted.add_metric(names, float(g.inserted))
    yield from (fill, fp_rate, inserted)


def _admission_metrics(gauges: CrawlGauges) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "crawlproj_crawl_urls_admitted",
        "URLs admitted, crawl-wide",
        value=float(gauges.counters.get("admitted", 0)),
    )
    rejected = {k: float(v) for k, v in gauges.rejected.items()}
    yield _labelled(
        "crawlproj_crawl_urls_rejected", "URLs refused at admission, crawl-wide", "reason", rejected
    )
    failures = {k: float(v) for k, v in gauges.robots_failures.items()}
    yield _labelled(
        "crawlproj_crawl_robots_failures",
        "robots.txt fetch attempts that failed, crawl-wide",
        "cause",
        failures,
    )
    yield GaugeMetricFamily(
        "crawlproj_robots_failing_origins",
        "Origins whose latest robots.txt fetches failed",
        value=float(gauges.robots_failing_origins),
    )


def _recrawl_metrics(gauges: CrawlGauges) -> Iterator[Metric]:
    late = gauges.recrawl_overdue
    yield GaugeMetricFamily(
        "crawlproj_recrawl_backlog_due",
        "Stored URLs due for a re-visit now, crawl-wide",
        value=float(gauges.recrawl_due_now),
    )
    yield GaugeMetricFamily(
        "crawlproj_recrawl_backlog_overdue",
        "Due URLs overdue by more than their own interval (estimated when not exact)",
        value=float(late.count),
    )
    yield GaugeMetricFamily(
        "crawlproj_recrawl_backlog_overdue_exact",
        "1 when every due URL was looked at, 0 when the overdue count is from a sample",
        value=float(late.exact),
    )
