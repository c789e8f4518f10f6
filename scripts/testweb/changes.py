"""When the test web's changing pages change: seeded Poisson processes.

A page with a change rate (HostSpec.change_rates, changes per second) is rewritten
at the arrival times of a Poisson process that starts at WebSpec.epoch. The times
come from an RNG seeded on (spec.seed, host, path), so the server, the tests and the
freshness benchmark all compute the very same change times, and "was the stored copy
current at time t" has an exact answer.
"""

from __future__ import annotations

import bisect
import hashlib
import random


class ChangeClock:
    """Change times of one page, generated lazily up to the latest time asked."""

    def __init__(self, seed: int, host: str, path: str, rate: float, epoch: float) -> None:
        if rate < 0:
            raise ValueError(f"change rate of {host}{path} must be >= 0, not {rate}")
        digest = hashlib.sha256(f"{seed}|changes|{host}|{path}".encode()).digest()
        self._rng = random.Random(int.from_bytes(digest[:8], "big"))
        self.rate = rate
        self.epoch = epoch
        self.times: list[float] = []  # absolute epoch seconds, increasing
        self._next = epoch + self._gap()

    def _gap(self) -> float:
        return self._rng.expovariate(self.rate) if self.rate > 0 else float("inf")

    def _extend(self, until: float) -> None:
        while self._next <= until:
            self.times.append(self._next)
            self._next += self._gap()

    def version_at(self, t: float) -> int:
        """Changes that happened at or before t (0 = the page as first published)."""
        self._extend(t)
        return bisect.bisect_right(self.times, t)

    def changed_at(self, version: int) -> float:
        """When `version` went live (the epoch for version 0)."""
        if version <= 0:
            return self.epoch
        while len(self.times) < version:
            self._extend(self._next)
        return self.times[version - 1]

    def changes_between(self, start: float, end: float) -> list[float]:
        self._extend(end)
        return self.times[
            bisect.bisect_right(self.times, start) : bisect.bisect_right(self.times, end)
        ]
