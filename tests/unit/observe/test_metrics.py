"""Metrics settings, gap buckets and stats families (the endpoint itself:
tests/integration/test_metrics.py)."""

from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured

from extensions.observe.metrics import MetricsConfig, gap_buckets
from extensions.observe.metrics_stats import _url_metrics
from tests.project_settings import project_settings


def test_gap_buckets_contain_the_delay() -> None:
    buckets = gap_buckets(0.3)
    assert 0.3 in buckets and 0.27 in buckets and buckets == sorted(set(buckets))
    assert gap_buckets(0) == sorted(set(gap_buckets(0)))


def test_bad_metrics_settings_stop_the_extension_naming_the_setting() -> None:
    # Every rule's message: tests/unit/test_config.py.
    with pytest.raises(ValueError, match=r"^METRICS_BIND must be an IP address, not 'localhost'$"):
        MetricsConfig.from_settings(
            project_settings({"METRICS_PORT": 9410, "METRICS_BIND": "localhost"})
        )


def test_metrics_are_off_by_default() -> None:
    with pytest.raises(NotConfigured):
        MetricsConfig.from_settings(project_settings())


def test_sprawl_verdicts_are_a_labelled_counter() -> None:
    stats = {"frontier/sprawl/reported": 3, "frontier/sprawl/settled": 1, "frontier/admitted": 9}
    families = {m.name: m for m in _url_metrics(stats)}
    samples = {s.labels["verdict"]: s.value for s in families["crawlproj_sprawl_pages"].samples}
    assert samples == {"reported": 3, "settled": 1}
