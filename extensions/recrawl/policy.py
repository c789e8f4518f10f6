"""Re-crawl policy math: freshness of a copy, change-rate estimates, budget allocation.

Model (Cho & Garcia-Molina, "Effective page refresh policies for Web crawlers", 2003):
a page changes as a Poisson process of rate lambda (changes per second); a crawler that
re-fetches it every T seconds keeps a copy that is fresh a fraction

    F(lambda, T) = (1 - e^(-lambda T)) / (lambda T)

of the time. With a budget of B fetches per second over pages of rates lambda_i, a
policy chooses fetch rates f_i (T_i = 1/f_i) with sum f_i = B:
- uniform:      f_i = B / n
- proportional: f_i = B lambda_i / sum(lambda)   (every page gets the same lambda T,
                                                   so fast movers drag all pages down)
- optimal:      maximise sum F(lambda_i, 1/f_i); the Lagrange condition dF/df_i = mu
                gives pages changing too fast to keep fresh f_i = 0.
This module is pure (no Redis, no clock): recrawl_schedule.py applies it to the crawl's
change-rate histogram and recrawl.py to each stored URL.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

POLICIES = ("uniform", "proportional", "optimal")


def freshness(rate: float, interval: float) -> float:
    """Expected fraction of time a copy re-fetched every `interval` s is fresh."""
    if rate < 0 or interval < 0:
        raise ValueError("rate and interval must be >= 0")
    x = rate * interval
    if x == 0:
        return 1.0
    if x < 1e-8:  # 1 - x/2 + ...: avoid cancellation in 1 - e^-x
        return 1.0 - x / 2
    return -math.expm1(-x) / x


def freshness_at_frequency(rate: float, frequency: float) -> float:
    """F for a page fetched `frequency` times per second (0 = never: always stale if it
    changes at all)."""
    if frequency <= 0:
        return 1.0 if rate == 0 else 0.0
    return freshness(rate, 1.0 / frequency)


def _gain(rate: float, frequency: float) -> float:
    """dF/df: the freshness one more fetch per second buys this page."""
    if rate == 0:
        return 0.0
    x = rate / frequency
    return (-math.expm1(-x) - x * math.exp(-x)) / rate


def _frequency_for_gain(rate: float, mu: float) -> float:
    """The frequency at which this page's marginal gain equals mu (0 if never)."""
    if rate == 0 or mu >= 1.0 / rate:  # the gain never exceeds 1/rate (at f -> 0)
        return 0.0
    low, high = 0.0, rate
    while _gain(rate, high) > mu:  # the gain falls as f grows: find a bracket
        high *= 2.0
    for _ in range(100):
        mid = (low + high) / 2
        if mid == 0 or _gain(rate, mid) > mu:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def allocate(
    rates: Sequence[float],
    budget: float,
    policy: str = "uniform",
    counts: Sequence[float] | None = None,
) -> list[float]:
    """Fetch frequencies (per second) for pages of the given change rates, summing to
    `budget` fetches per second. With `counts`, rates[i] stands for counts[i] pages
    (a histogram of a large crawl) and the frequency returned is per page."""
    if budget < 0:
        raise ValueError("budget must be >= 0")
    if policy not in POLICIES:
        raise ValueError(f"RECRAWL_POLICY must be one of {POLICIES}, not {policy!r}")
    weights = [1.0] * len(rates) if counts is None else [float(c) for c in counts]
    if len(weights) != len(rates) or any(w < 0 for w in weights):
        raise ValueError("counts must be >= 0, one per rate")
    pages = sum(weights)
    if pages == 0:
        return [0.0] * len(rates)
    if policy == "uniform":
        return [budget / pages] * len(rates)
    total = sum(r * w for r, w in zip(rates, weights, strict=True))
    if policy == "proportional":
        # r / total first: budget * r underflows for a subnormal rate (hypothesis found 5e-324).
        return [budget * (r / total) for r in rates] if total else [budget / pages] * len(rates)
    return _optimal(rates, weights, budget)


def _optimal(rates: Sequence[float], weights: Sequence[float], budget: float) -> list[float]:
    if all(r == 0 for r in rates):
        return [budget / sum(weights)] * len(rates)

    def spent(frequencies: Sequence[float]) -> float:
        return sum(f * w for f, w in zip(frequencies, weights, strict=True))

    low, high = 0.0, max(1.0 / r for r in rates if r > 0)  # mu above high: nobody fetched
    for _ in range(200):
        mu = (low + high) / 2
        if spent([_frequency_for_gain(r, mu) for r in rates]) > budget:
            low = mu
        else:
            high = mu
    frequencies = [_frequency_for_gain(r, high) for r in rates]
    # Where fetches are scarce (f << lambda) F is linear in f: a page's marginal gain is
    # flat at 1/lambda, so its frequency jumps from ~0 to a lot as mu crosses 1/lambda
    # and bisection stops at the jump with budget unspent. The rest belongs to exactly
    # the pages that jump there (all at marginal gain mu), in proportion to the jump.
    leftover = budget - spent(frequencies)
    if leftover > 0:
        below = [_frequency_for_gain(r, low) for r in rates]
        jumps = [max(0.0, b - f) for b, f in zip(below, frequencies, strict=True)]
        extra = jumps if spent(jumps) > 0 else [f or 1.0 for f in frequencies]
        scale = leftover / spent(extra)
        frequencies = [f + e * scale for f, e in zip(frequencies, extra, strict=True)]
    return frequencies


def mean_freshness(rates: Sequence[float], frequencies: Sequence[float]) -> float:
    """Average freshness of a set of pages under a given allocation."""
    if not rates:
        return 1.0
    return sum(freshness_at_frequency(r, f) for r, f in zip(rates, frequencies, strict=True)) / len(
        rates
    )


def estimate_rate(
    intervals: Sequence[float],
    changed: Sequence[bool],
    ages: Sequence[float | None] | None = None,
) -> float:
    """Maximum-likelihood Poisson change rate from visits at irregular intervals
    (Cho & Garcia-Molina 2003). A visit t seconds after the previous one saw a change
    with probability 1 - e^(-lambda t). When the server's Last-Modified tells how long
    before the visit the page last changed (`ages[i]`, None = unknown), that visit's
    likelihood is the density of the last change at that age, lambda e^(-lambda age):
    without it a page changing much faster than it is visited looks like it changes
    once per visit (every visit sees "a change"), and the rate saturates at the visit
    rate; with it the estimate keeps growing with the true rate. Solves

        n_aged / lambda - sum(ages) + sum over changed, unaged of t / (e^(lambda t) - 1)
            = sum over unchanged of t.

    No change ever seen: 0. Every visit a change and no age known: the MLE is
    unbounded, so the estimate is the bias-reduced (n + 0.5) / (total + 0.5 min t)."""
    ages = list(ages) if ages is not None else [None] * len(intervals)
    visits = [
        (t, c, a if c else None) for t, c, a in zip(intervals, changed, ages, strict=True) if t > 0
    ]
    if not visits or not any(c for _, c, _ in visits):
        return 0.0
    unchanged_time = sum(t for t, c, _ in visits if not c)
    aged = [min(max(a, 1e-3), t) for t, _, a in visits if a is not None]
    unaged = [t for t, c, a in visits if c and a is None]
    if unchanged_time == 0 and not aged:
        total = sum(t for t, _, _ in visits)
        return (len(visits) + 0.5) / (total + 0.5 * min(t for t, _, _ in visits))
    if not unaged:
        return len(aged) / (sum(aged) + unchanged_time)

    def excess(rate: float) -> float:  # decreasing in rate
        seen = sum(t / math.expm1(rate * t) for t in unaged) + len(aged) / rate
        return seen - sum(aged) - unchanged_time

    low, high = 1e-12, 1.0 / min(t for t, _, _ in visits)
    while excess(high) > 0:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2
        if excess(mid) > 0:
            low = mid
        else:
            high = mid
    return (low + high) / 2
