"""Re-crawl policy math: the freshness formula, allocations and the change-rate MLE."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extensions.recrawl.policy import (
    POLICIES,
    allocate,
    estimate_rate,
    freshness,
    mean_freshness,
)

DAY = 86400.0


def test_freshness_formula() -> None:
    assert freshness(0.0, 100.0) == 1.0
    assert freshness(1.0, 1.0) == pytest.approx(1 - math.exp(-1))
    assert freshness(2.0, 3.0) == pytest.approx((1 - math.exp(-6)) / 6)
    assert freshness(1e-12, 1.0) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        freshness(-1.0, 1.0)


def test_two_pages_nine_and_one_changes_a_day_two_fetches_a_day() -> None:
    rates, budget = [9 / DAY, 1 / DAY], 2 / DAY
    result = {p: mean_freshness(rates, allocate(rates, budget, p)) for p in POLICIES}
    # Proportional gives both pages lambda T = 5: F = (1 - e^-5) / 5.
    assert result["proportional"] == pytest.approx((1 - math.exp(-5)) / 5)
    assert result["proportional"] == pytest.approx(0.1987, abs=5e-4)
    assert result["uniform"] == pytest.approx(((1 - math.exp(-9)) / 9 + 1 - math.exp(-1)) / 2)
    assert result["optimal"] >= result["uniform"] > result["proportional"]
    # The optimum spends little on the page it cannot keep fresh.
    fast, slow = allocate(rates, budget, "optimal")
    assert fast < slow and fast + slow == pytest.approx(budget)


@settings(max_examples=60, deadline=None)
@given(
    rates=st.lists(st.floats(min_value=1e-6, max_value=1e-2), min_size=2, max_size=12),
    budget=st.floats(min_value=1e-5, max_value=1e-1),
)
def test_optimal_beats_uniform_beats_proportional(rates: list[float], budget: float) -> None:
    fresh = {p: mean_freshness(rates, allocate(rates, budget, p)) for p in POLICIES}
    assert fresh["optimal"] >= fresh["uniform"] - 1e-9
    assert fresh["uniform"] >= fresh["proportional"] - 1e-9  # Cho & Garcia-Molina's result
    for policy in POLICIES:
        assert sum(allocate(rates, budget, policy)) == pytest.approx(budget, rel=1e-6)


def test_unknown_policy_names_the_setting() -> None:
    with pytest.raises(ValueError, match="RECRAWL_POLICY"):
        allocate([1.0], 1.0, "random")


@pytest.mark.parametrize("true_rate", [1 / 600, 1 / 60, 1 / 6])
def test_change_rate_estimate_converges_with_irregular_visits(true_rate: float) -> None:
    rng = random.Random(42)
    intervals = [rng.expovariate(1 / 60) + 1 for _ in range(4000)]
    changed = [rng.random() < 1 - math.exp(-true_rate * t) for t in intervals]
    assert estimate_rate(intervals, changed) == pytest.approx(true_rate, rel=0.1)


def simulate_visits(
    rate: float, interval: float, visits: int, seed: int, with_ages: bool
) -> tuple[list[float], list[bool], list[float | None]]:
    """Visits every ~interval s to a page changing as a Poisson process: (intervals,
    changed?, age of the last change when changed and the server tells it)."""
    rng = random.Random(seed)
    intervals, changed, ages = [], [], []
    for _ in range(visits):
        t = interval * rng.uniform(0.8, 1.2)
        changes, clock = [], rng.expovariate(rate)
        while clock < t:
            changes.append(clock)
            clock += rng.expovariate(rate)
        intervals.append(t)
        changed.append(bool(changes))
        ages.append(t - changes[-1] if changes and with_ages else None)
    return intervals, changed, ages


@pytest.mark.parametrize("true_rate", [0.1, 1.0, 10.0])
def test_last_modified_ages_keep_fast_movers_from_saturating(true_rate: float) -> None:
    """Visits every 8 s: without Last-Modified a page changing every 0.1 s looks like
    it changes about once per visit; with it the estimate follows the true rate."""
    intervals, changed, ages = simulate_visits(true_rate, 8.0, 400, seed=3, with_ages=True)
    assert estimate_rate(intervals, changed, ages) == pytest.approx(true_rate, rel=0.15)
    if true_rate == 10.0:  # blind, it saturates near the visit rate (1/8 s)
        assert estimate_rate(intervals, changed) < 0.2 * true_rate


def test_ages_mix_with_unknown_ages_and_unchanged_visits() -> None:
    intervals, changed, ages = simulate_visits(0.05, 10.0, 3000, seed=9, with_ages=True)
    half = [a if i % 2 else None for i, a in enumerate(ages)]
    assert estimate_rate(intervals, changed, half) == pytest.approx(0.05, rel=0.1)
    assert estimate_rate([10.0], [True], [0.0]) > 0  # a change at the visit's instant


def test_change_rate_edge_cases() -> None:
    assert estimate_rate([], []) == 0.0
    assert estimate_rate([10, 20], [False, False]) == 0.0  # a 304 counts as no change
    always = estimate_rate([10, 10, 10], [True, True, True])
    assert 0.1 <= always < 1.0  # changed at every visit: >= once per 10 s, yet finite


def test_the_issue_table_cannot_hold_with_one_set_of_rates() -> None:
    """The issue's seed table (proportional 0.198, uniform 0.956, optimum 0.962) mixes two
    budgets: proportional 0.198 is lambda T = 5 for every page (reproduced above), and
    with two pages that forces uniform's mean lambda T to be 5 too, which caps uniform far
    below 0.956 whatever the split of the rates. So the code reproduces 0.198 and
    documents which uniform/optimum go with it."""
    budget = 2 / DAY
    for fast_share in [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]:
        total = 5 * budget  # proportional F = 0.198 <=> sum(lambda) / budget = 5
        rates = [fast_share * total, (1 - fast_share) * total]
        assert mean_freshness(rates, allocate(rates, budget, "proportional")) == pytest.approx(
            0.1987, abs=5e-4
        )
        assert mean_freshness(rates, allocate(rates, budget, "uniform")) < 0.6


@given(
    st.lists(st.floats(0.0, 5.0), min_size=1, max_size=6),
    st.lists(st.integers(1, 4), min_size=6, max_size=6),
    st.floats(0.1, 20.0),
    st.sampled_from(POLICIES),
)
@settings(max_examples=150, deadline=None)
def test_histogram_counts_allocate_like_the_expanded_pages(
    rates: list[float], counts: list[int], budget: float, policy: str
) -> None:
    counts = counts[: len(rates)]
    expanded = [r for r, c in zip(rates, counts, strict=True) for _ in range(c)]
    per_bucket = allocate(rates, budget, policy, counts)
    spent = sum(f * c for f, c in zip(per_bucket, counts, strict=True))
    assert spent == pytest.approx(budget, rel=1e-6)
    weighted = sum(
        c * mean_freshness([r], [f]) for r, f, c in zip(rates, per_bucket, counts, strict=True)
    ) / sum(counts)
    direct = mean_freshness(expanded, allocate(expanded, budget, policy))
    assert weighted == pytest.approx(direct, abs=1e-6)
