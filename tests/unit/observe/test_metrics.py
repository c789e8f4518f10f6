"""Metrics settings and gap buckets (the endpoint itself: tests/integration/test_metrics.py)."""

from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings

from extensions.observe.metrics import MetricsConfig, gap_buckets


def test_gap_buckets_contain_the_delay() -> None:
    buckets = gap_buckets(0.3)
    assert 0.3 in buckets and 0.27 in buckets and buckets == sorted(set(buckets))
    assert gap_buckets(0) == sorted(set(gap_buckets(0)))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"METRICS_PORT": 70000}, "METRICS_PORT must be 1-65535"),
        ({"METRICS_PORT": 9410, "METRICS_BIND": "localhost"}, "METRICS_BIND 'localhost'"),
        ({"METRICS_PORT": 9410, "METRICS_REDIS_INTERVAL": -1}, "METRICS_REDIS_INTERVAL"),
    ],
)
def test_bad_metrics_settings_name_the_setting(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MetricsConfig.from_settings(Settings(settings))


def test_metrics_are_off_by_default() -> None:
    with pytest.raises(NotConfigured):
        MetricsConfig.from_settings(Settings({}))
