"""The re-crawl schedule: rate buckets and per-policy intervals from a histogram."""

from __future__ import annotations

import math

import pytest

from extensions.recrawl.policy import freshness, mean_freshness
from extensions.recrawl.schedule import (
    NEW_BUCKET,
    ZERO_BUCKET,
    RecrawlSchedule,
    ScheduleConfig,
    bucket_rate,
    rate_bucket,
)

HOUR, DAY = 3600.0, 86400.0


def config(policy: str = "uniform", **kw: float) -> ScheduleConfig:
    base = {"interval": DAY, "min_interval": 60.0, "max_interval": 30 * DAY, "cap_freshness": 0.2}
    return ScheduleConfig(policy=policy, **{**base, **kw})


def test_buckets_are_quarter_octaves_around_the_rate() -> None:
    assert rate_bucket(0.0) == ZERO_BUCKET and bucket_rate(ZERO_BUCKET) == 0.0
    for rate in [1e-7, 3.3e-5, 1 / DAY, 0.01, 2.0]:
        middle = bucket_rate(rate_bucket(rate))
        assert 2**-0.25 <= middle / rate <= 2**0.25


def test_uniform_gives_every_page_the_interval_and_caps_fast_movers() -> None:
    schedule = RecrawlSchedule(config())
    slow, fast = rate_bucket(1 / (7 * DAY)), rate_bucket(10 / DAY)  # F(10/day, 1 day) = 0.1
    schedule.update({slow: 90, fast: 10, ZERO_BUCKET: 100, NEW_BUCKET: 50})
    assert schedule.interval(fast) == 30 * DAY
    # The 10 capped pages free 10 x (1/day - 1/30 days) of budget for the other 190.
    saved = 10 * (1 / DAY - 1 / (30 * DAY))
    expected = 1 / ((190 / DAY + saved) / 190)
    assert schedule.interval(slow) == pytest.approx(expected)
    assert schedule.interval(ZERO_BUCKET) == pytest.approx(expected)
    assert schedule.interval(NEW_BUCKET) == DAY  # no estimate yet: the plain interval
    # Same budget as uniform without a cap: sum of frequencies = pages / interval.
    spent = 190 / schedule.interval(slow) + 10 / schedule.interval(fast)
    assert spent == pytest.approx(200 / DAY)


def test_cap_is_the_freshness_threshold_at_the_interval() -> None:
    schedule = RecrawlSchedule(config(cap_freshness=0.5))
    below = 1.5 / DAY  # F(1.5/day, 1 day) = 0.52: kept
    above = 2.5 / DAY  # F = 0.37: capped
    assert freshness(bucket_rate(rate_bucket(below)), DAY) > 0.5
    assert freshness(bucket_rate(rate_bucket(above)), DAY) < 0.5
    schedule.update({rate_bucket(below): 5, rate_bucket(above): 5})
    assert schedule.interval(rate_bucket(above)) == 30 * DAY
    assert schedule.interval(rate_bucket(below)) < DAY


def test_proportional_and_optimal_spend_the_same_budget() -> None:
    histogram = {rate_bucket(r): 10 for r in (0.5 / DAY, 2 / DAY, 8 / DAY, 30 / DAY)}
    rates = {b: bucket_rate(b) for b in histogram}
    results = {}
    for policy in ("uniform", "proportional", "optimal"):
        schedule = RecrawlSchedule(config(policy, max_interval=1e9, min_interval=1.0))
        schedule.update(histogram)
        spent = sum(10 / schedule.interval(b) for b in histogram)
        # (a page the optimum never fetches still costs 1 / max_interval: rel 1e-4)
        assert spent == pytest.approx(40 / DAY, rel=1e-4)
        freqs = [1 / schedule.interval(b) for b in histogram]
        results[policy] = mean_freshness([rates[b] for b in histogram], freqs)
    assert results["optimal"] >= results["uniform"] > results["proportional"]


def test_intervals_are_clamped_and_unknown_buckets_follow_the_policy() -> None:
    schedule = RecrawlSchedule(config("proportional", min_interval=HOUR))
    known = rate_bucket(100 / DAY)
    schedule.update({known: 1, rate_bucket(0.01 / DAY): 1, ZERO_BUCKET: 1})
    assert schedule.interval(known) >= HOUR
    assert schedule.interval(ZERO_BUCKET) == 30 * DAY  # proportional: never changes, max
    # Not in the histogram: proportional's closed form (interval ~ 1 / rate).
    other = rate_bucket(25 / DAY)
    ratio = schedule.interval(other) / schedule.interval(known)
    assert ratio == pytest.approx(bucket_rate(known) / bucket_rate(other))
    optimal = RecrawlSchedule(config("optimal"))
    optimal.update({known: 1, rate_bucket(0.5 / DAY): 1})
    assert optimal.interval(rate_bucket(110 / DAY)) == optimal.interval(known)  # neighbour


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"policy": "random"}, "RECRAWL_POLICY"),
        ({"min_interval": 2 * DAY}, "RECRAWL_MIN_INTERVAL"),
        ({"cap_freshness": 1.0}, "RECRAWL_CAP_FRESHNESS"),
    ],
)
def test_bad_settings_name_the_setting(kw: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        config(**kw)


def test_empty_histogram_means_the_plain_interval() -> None:
    schedule = RecrawlSchedule(config())
    schedule.update({})
    assert schedule.interval(rate_bucket(1 / DAY)) == DAY
    assert not math.isnan(schedule.interval(ZERO_BUCKET))


def test_rate_one_per_second_is_not_the_never_changes_bucket() -> None:
    # The bucket of 1 change/s is "0" (4 x log2(1)); it must not mean "never changes".
    assert rate_bucket(1.0) != ZERO_BUCKET
    assert bucket_rate(rate_bucket(1.0)) == pytest.approx(1.0, rel=0.2)
    schedule = RecrawlSchedule(config("proportional", interval=8.0, min_interval=0.5))
    schedule.update({rate_bucket(1.0): 8, rate_bucket(0.25): 8, ZERO_BUCKET: 8})
    assert schedule.interval(rate_bucket(1.0)) < schedule.interval(rate_bucket(0.25))
