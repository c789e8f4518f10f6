"""The re-crawl schedule: a revisit interval for every change rate, from the policy.

Workers do not allocate fetches page by page: the crawl keeps a histogram of its
stored URLs' estimated change rates in Redis (a quarter-octave bucket per rate), and
each worker turns it into one interval per bucket with recrawl_policy.allocate, a few
hundred buckets at most whatever the crawl's size. The budget is what uniform
revisiting at RECRAWL_INTERVAL costs: stored URLs / RECRAWL_INTERVAL fetches per second,
so every policy spends the same fetches and only their distribution differs.

- uniform (default): every URL every RECRAWL_INTERVAL, except fast movers, URLs whose
  copy would be fresh less than RECRAWL_CAP_FRESHNESS of the time even at that interval:
  they are visited only every RECRAWL_MAX_INTERVAL (to keep their estimate current),
  and the fetches saved shorten everybody else's interval.
- proportional: frequency proportional to the change rate (for comparison: it pours
  fetches into pages that cannot be kept fresh anyway).
- optimal: Cho & Garcia-Molina's Lagrangian optimum for the histogram.
URLs with fewer than RECRAWL_MIN_HISTORY observed intervals have no estimate yet (the
"new" bucket): they get RECRAWL_INTERVAL under every policy.
Every interval is clamped to [RECRAWL_MIN_INTERVAL, RECRAWL_MAX_INTERVAL].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from extensions.recrawl.policy import POLICIES, allocate, freshness

NEW_BUCKET = "new"  # fetched once: no change-rate estimate yet
ZERO_BUCKET = "never"  # never seen to change (not "0": that is the bucket of rate 1/s)
BUCKETS_PER_OCTAVE = 4


def rate_bucket(rate: float) -> str:
    """Histogram bucket of a change rate (changes per second)."""
    if rate <= 0:
        return ZERO_BUCKET
    return str(math.floor(BUCKETS_PER_OCTAVE * math.log2(rate)))


def bucket_rate(bucket: str) -> float:
    """The rate a bucket stands for (its geometric middle)."""
    if bucket == ZERO_BUCKET:
        return 0.0
    return 2.0 ** ((int(bucket) + 0.5) / BUCKETS_PER_OCTAVE)


@dataclass(frozen=True)
class ScheduleConfig:
    policy: str = "uniform"
    interval: float = 86400.0  # RECRAWL_INTERVAL: the uniform interval, i.e. the budget
    min_interval: float = 3600.0
    max_interval: float = 30 * 86400.0
    cap_freshness: float = 0.2  # uniform: below this freshness a URL is a fast mover

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(
                f"RECRAWL_POLICY must be one of {', '.join(POLICIES)}, not {self.policy!r}"
            )
        if not 0 < self.min_interval <= self.interval <= self.max_interval:
            raise ValueError(
                "RECRAWL_MIN_INTERVAL <= RECRAWL_INTERVAL <= RECRAWL_MAX_INTERVAL must hold "
                f"(got {self.min_interval}, {self.interval}, {self.max_interval}), all > 0"
            )
        if not 0 <= self.cap_freshness < 1:
            raise ValueError(f"RECRAWL_CAP_FRESHNESS must be in [0, 1), not {self.cap_freshness}")


class RecrawlSchedule:
    """Bucket -> revisit interval, rebuilt from the crawl's rate histogram."""

    def __init__(self, config: ScheduleConfig) -> None:
        self.config = config
        self.intervals: dict[str, float] = {}
        # Frequency of any rate under the current histogram, where the policy has a
        # closed form (uniform with its cap, proportional); None for the optimum.
        self._frequency: Callable[[float], float] | None = None

    def update(self, histogram: dict[str, int]) -> None:
        counts = {b: c for b, c in histogram.items() if c > 0 and b != NEW_BUCKET}
        buckets = sorted(counts, key=bucket_rate)
        rates = [bucket_rate(b) for b in buckets]
        weights = [counts[b] for b in buckets]
        # Pages without an estimate take their uniform share first.
        budget = sum(weights) / self.config.interval
        if self.config.policy == "uniform":
            self._frequency = self._uniform_with_cap(rates, weights, budget)
        elif self.config.policy == "proportional":
            total = sum(r * w for r, w in zip(rates, weights, strict=True))
            self._frequency = (lambda r: budget * r / total) if total else None
        else:
            self._frequency = None
        if self._frequency is not None:
            frequencies = [self._frequency(r) for r in rates]
        else:
            frequencies = allocate(rates, budget, self.config.policy, weights)
        self.intervals = {b: self._clamp(f) for b, f in zip(buckets, frequencies, strict=True)}

    def _uniform_with_cap(
        self, rates: list[float], weights: list[int], budget: float
    ) -> Callable[[float], float]:
        slow = 1.0 / self.config.max_interval
        fast = [self._fast(r) for r in rates]
        fast_pages = sum(w for w, f in zip(weights, fast, strict=True) if f)
        others = sum(weights) - fast_pages
        share = (budget - fast_pages * slow) / others if others else 1.0 / self.config.interval
        return lambda rate: slow if self._fast(rate) else share

    def _fast(self, rate: float) -> bool:
        """Changes too fast to keep fresh even at the uniform interval (the cap)."""
        return freshness(rate, self.config.interval) < self.config.cap_freshness

    def _clamp(self, frequency: float) -> float:
        interval = 1.0 / frequency if frequency > 0 else math.inf
        return min(max(interval, self.config.min_interval), self.config.max_interval)

    def interval(self, bucket: str) -> float:
        """Revisit interval of a URL in `bucket`. A bucket the last histogram did not
        have gets the policy's closed form, or (optimal) its nearest neighbour's; the
        next refresh includes it."""
        if bucket == NEW_BUCKET or not self.intervals:
            return self.config.interval
        found = self.intervals.get(bucket)
        if found is not None:
            return found
        if self._frequency is not None:
            return self._clamp(self._frequency(bucket_rate(bucket)))
        if bucket == ZERO_BUCKET:
            return self.config.max_interval  # the optimum never fetches a static page
        rated = [b for b in self.intervals if b != ZERO_BUCKET]
        if not rated:
            return self.config.interval
        nearest = min(rated, key=lambda b: abs(int(b) - int(bucket)))
        return self.intervals[nearest]
