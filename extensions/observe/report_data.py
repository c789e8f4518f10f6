"""What the crawl report remembers during a crawl, in bounded memory.

- Timeline: responses per time bucket. Buckets start at 0.1 s; past MAX_BUCKETS the
  buckets are merged pairwise and their width doubled, so a crawl of any length
  keeps at most MAX_BUCKETS numbers (a month at 600 buckets is ~1.6 h per bucket).
- Gaps: count, minimum, gaps shorter than the configured delay, overlaps, and a
  uniform reservoir sample (Algorithm R, seeded) of GAP_SAMPLE gaps for the histogram.
- Hosts: responses per host for the first MAX_HOSTS hosts; later hosts are counted
  under OTHER_HOSTS (top hosts are found early in practice; the total stays exact).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MAX_BUCKETS = 600
GAP_SAMPLE = 4096
MAX_HOSTS = 10_000
OTHER_HOSTS = "(other hosts)"


@dataclass
class Timeline:
    t0: float
    bucket_s: float = 0.1
    counts: list[int] = field(default_factory=list)

    def add(self, now: float) -> None:
        index = int(max(0.0, now - self.t0) // self.bucket_s)
        while index >= MAX_BUCKETS:
            self._halve()
            index = int(max(0.0, now - self.t0) // self.bucket_s)
        if index >= len(self.counts):
            self.counts.extend([0] * (index + 1 - len(self.counts)))
        self.counts[index] += 1

    def _halve(self) -> None:
        pairs = zip(self.counts[0::2], [*self.counts[1::2], 0], strict=False)
        self.counts = [a + b for a, b in pairs]
        self.bucket_s *= 2

    def to_json(self) -> dict[str, Any]:
        return {"t0": self.t0, "bucket_s": self.bucket_s, "responses": list(self.counts)}


@dataclass
class GapStats:
    delay: float
    count: int = 0
    below_delay: int = 0
    overlaps: int = 0
    min_s: float | None = None
    sample: list[float] = field(default_factory=list)
    _rng: random.Random = field(default_factory=lambda: random.Random(0), repr=False)

    def add(self, gap: float) -> None:
        self.count += 1
        if gap < self.delay:
            self.below_delay += 1
        if self.min_s is None or gap < self.min_s:
            self.min_s = gap
        if len(self.sample) < GAP_SAMPLE:
            self.sample.append(gap)
        else:
            slot = self._rng.randrange(self.count)
            if slot < GAP_SAMPLE:
                self.sample[slot] = gap

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "below_delay": self.below_delay,
            "overlaps": self.overlaps,
            "min_s": self.min_s,
            "sample": [round(g, 4) for g in self.sample],
            "sampled": self.count > len(self.sample),
        }


@dataclass
class HostCounts:
    counts: Counter[str] = field(default_factory=Counter)

    def add(self, host: str) -> None:
        if host in self.counts or len(self.counts) < MAX_HOSTS:
            self.counts[host] += 1
        else:
            self.counts[OTHER_HOSTS] += 1

    def top(self, n: int) -> dict[str, int]:
        return dict(self.counts.most_common(n))


def json_safe(value: Any) -> Any:
    """Scrapy stats hold datetimes and the odd object: keep numbers, str the rest."""
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
