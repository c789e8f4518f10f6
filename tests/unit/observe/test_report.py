"""Crawl report: bounded collectors, where the report goes, the SVG it draws."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from extensions.observe import report_data
from extensions.observe.report import first_local_feed, report_path
from extensions.observe.report_data import GapStats, HostCounts, Timeline, json_safe
from extensions.observe.report_html import GAP_BINS, display_buckets, gap_bins, render
from tests.project_settings import project_settings


def test_timeline_keeps_at_most_max_buckets_and_the_total() -> None:
    timeline = Timeline(t0=0.0)
    for n in range(20_000):
        timeline.add(n * 0.05)  # 1000 s at 20 responses/s
    assert len(timeline.counts) <= report_data.MAX_BUCKETS
    assert sum(timeline.counts) == 20_000
    assert timeline.bucket_s == pytest.approx(3.2)  # 0.1 s doubled until 600 cover 1000 s


def test_gap_sample_is_bounded_and_counts_are_exact() -> None:
    gaps = GapStats(delay=1.0)
    for n in range(10_000):
        gaps.add(0.5 if n % 10 == 0 else 2.0)
    data = gaps.to_json()
    assert data["count"] == 10_000 and data["below_delay"] == 1000 and data["min_s"] == 0.5
    assert len(data["sample"]) == report_data.GAP_SAMPLE and data["sampled"]


def test_hosts_past_the_cap_count_as_other(monkeypatch) -> None:
    monkeypatch.setattr(report_data, "MAX_HOSTS", 2)
    hosts = HostCounts()
    for host in ["a", "b", "a", "c", "d", "b"]:
        hosts.add(host)
    assert hosts.top(5) == {"a": 2, "b": 2, report_data.OTHER_HOSTS: 2}


def test_report_goes_beside_the_feed_else_into_the_data_dir(tmp_path: Path) -> None:
    feed = tmp_path / "out" / "items.jsonl"
    settings = project_settings({"FEEDS": {str(feed): {"format": "jsonl"}}})
    assert report_path(settings, "web") == tmp_path / "out" / "items-report.html"
    assert first_local_feed({"s3://b/k.jsonl": {}, f"file://{feed}": {}}) == feed
    assert first_local_feed({"out/%(name)s.jsonl": {}}) is None
    explicit = project_settings({"CRAWL_REPORT_PATH": str(tmp_path / "r.html")})
    assert report_path(explicit, "web") == tmp_path / "r.html"
    fallback = project_settings({"CRAWL_DATA_DIR": str(tmp_path / "data")})
    assert report_path(fallback, "web") == tmp_path / "data" / "web-report.html"
    assert report_path(fallback, "web", "j1") == tmp_path / "data" / "web-j1-report.html"


def test_gap_bins_put_long_gaps_in_the_overflow_bin() -> None:
    # 95th percentile 0.6 < 2 x delay: bins of 1.0 / 20 s; the three 50 s gaps overflow.
    width, counts = gap_bins([0.6] * 97 + [50.0] * 3, delay=0.5)
    assert width == pytest.approx(0.05) and len(counts) == GAP_BINS + 1
    assert counts[12] == 97 and counts[-1] == 3 and sum(counts) == 100


def test_display_buckets_merge_down() -> None:
    counts, width = display_buckets([1] * 1000, 0.1)
    assert len(counts) <= 120 and sum(counts) == 1000 and width >= 0.4


def test_render_escapes_and_survives_an_empty_crawl() -> None:
    page = render({"spider": "<x>", "stats": {}, "timeline": {}, "gaps": {}, "hosts": {}})
    assert "<x>" not in page and "&lt;x&gt;" in page
    assert "no responses" in page and "no gaps observed" in page


def test_json_safe_keeps_numbers_and_strings_dates() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    assert json_safe({"a": 1, "b": when, "c": [1.5, None]}) == {
        "a": 1,
        "b": "2026-01-01T00:00:00+00:00",
        "c": [1.5, None],
    }


def test_the_report_shows_trap_feedback_and_closed_patterns() -> None:
    stats = {
        "frontier/redis/trap_closed": 3,
        "frontier/redis/trap_reopened": 1,
        "frontier/redis/pattern_closed": 40,
        "frontier/dropped/pattern_closed": 12,
        "frontier/closed_patterns": ["shop.test/shop/?color&size", "h.test/calendar/<N>/<N>"],
        "frontier/redis/past_the_end": 7,
        "frontier/dropped/past_the_end": 5,
        "frontier/ended_sequences": ["forum.test/page/<N> past 110"],
    }
    html = render({"stats": stats})
    assert "Crawl budget: trap feedback" in html
    assert "patterns closed" in html and "URLs refused: pattern closed" in html
    assert "<code>h.test/calendar/&lt;N&gt;/&lt;N&gt;</code>" in html
    assert "URLs refused: past a sequence&#x27;s end" in html
    assert "<code>forum.test/page/&lt;N&gt; past 110</code>" in html
    assert "No URL pattern is closed." in render({"stats": {}})
