"""URL-seen in Redis: a scalable Bloom filter per frontier shard (frontier/lua/bloom.lua).

Why: the exact seen set costs ~64 B of Redis per URL for ever (660 GB at the seeds' 10 B
URLs); a Bloom filter at SEEN_BITS_PER_KEY = 20 costs 2.5 B per URL and refuses about
8e-5 of the new URLs (false positives: those pages are lost). The admit script checks
and sets it in the same atomic step that queues the URL (DESIGN invariants 6 and 9).

SEEN_EXACT=True keeps the exact set beside it for crawls that cannot lose a page: a Bloom
"maybe" is then settled by the set (SISMEMBER), at the set's ~64 B per URL. A crawl whose
exact set predates its filter (stopped before the filter existed) has every Bloom miss
checked in that set too, so it resumes without admitting its URLs again.

A generation made since blocks came holds each key's k bits in one block of 4096 bits
(one GETRANGE per lookup, one SETRANGE per insert: bloom.lua), at ~21% more false
positives than the standard layout (fp_theory); older generations keep their layout.

Generations (Almeida et al. 2007): when the newest generation has taken its capacity, a
new one starts with SEEN_GROWTH x the capacity and half the error rate (+1/ln 2 bits per
key); lookups check every generation, inserts go to the newest, so the summed rate stays
under 2p. A generation's bitmap is split into segments of at most SEGMENT_BITS (a Redis
string holds 512 MB); a key's segment comes from its fingerprint, so each segment is a
Bloom filter of its own share of the keys, with the same rate.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from extensions.config import Setting, Table, at_least, between, one_of, read
from extensions.state.connection import AnyAsyncRedis, as_str
from extensions.state.keys import FrontierKeys

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

SEGMENT_BITS = 2**32  # Redis strings stop at 512 MB
FILL_ALERT = 0.8  # share of a generation's capacity that raises the fill alert


@dataclasses.dataclass(frozen=True)
class BloomConfig:
    """What bloom.lua reads from cfg.seen. The defaults equal crawlproj/settings.py."""

    capacity: int = 100_000  # SEEN_CAPACITY: keys of the first generation, per shard
    bits_per_key: float = 20.0  # SEEN_BITS_PER_KEY
    growth: int = 2  # SEEN_GROWTH
    exact: bool = False  # SEEN_EXACT: the exact set settles Bloom hits
    segment_bits: int = SEGMENT_BITS  # no setting: tests make it small to split bitmaps
    fill_alert: float = FILL_ALERT

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> BloomConfig:
        """ValueError names the bad SEEN_* setting."""
        return read(SEEN, settings)


SEEN = Table(
    BloomConfig,
    Setting("SEEN_BITS_PER_KEY", "bits_per_key", float, between(2, 64)),
    Setting("SEEN_CAPACITY", "capacity", int, at_least(1)),
    Setting("SEEN_EXACT", "exact", bool),
    Setting("SEEN_GROWTH", "growth", int, one_of(1, 2)),
)


@dataclasses.dataclass(frozen=True)
class Generation:
    """One generation as bloom.lua created it (its fields in the shard's seen_bloom hash)."""

    number: int
    capacity: int
    hashes: int  # k
    segment_bits: int
    segments: int
    count: int  # keys inserted
    block_bits: int = 0  # every key's bits in one block of this many (0: standard layout)

    @property
    def fill(self) -> float:
        return self.count / self.capacity

    @property
    def fp_rate(self) -> float:
        """Estimated from the count: there is no ground truth."""
        bits = self.segment_bits * self.segments
        return fp_theory(self.count / bits, self.hashes, self.block_bits)


def fp_theory(keys_per_bit: float, hashes: int, block_bits: int = 0) -> float:
    """False-positive rate of a Bloom filter holding `keys_per_bit` keys per bit.
    Standard layout: (1 - exp(-k n / m))^k. Blocked (Putze, Sanders and Singler 2007): a
    block holds Poisson(n B / m) keys, each of which set k random bits of its B; the rate
    is the mean of the standard one over that load (~21% above the standard at 20 bits
    per key and k = 14 with B = 4096; 3.3x with 64-byte blocks)."""
    k = hashes
    if not block_bits:
        return float((1.0 - math.exp(-k * keys_per_bit)) ** k)
    load = keys_per_bit * block_bits  # keys per block, on average
    if load <= 0:
        return 0.0
    spread = int(12 * math.sqrt(load)) + 12  # the Poisson mass beyond it is < 1e-30
    total = 0.0
    for i in range(max(0, int(load) - spread), int(load) + spread):
        weight = math.exp(i * math.log(load) - load - math.lgamma(i + 1))
        total += weight * (1.0 - (1.0 - 1.0 / block_bits) ** (k * i)) ** k
    return total


async def generations(redis: AnyAsyncRedis, keys: FrontierKeys) -> list[Generation]:
    """The shard's generations, oldest first ([] before its first admitted URL)."""
    raw = {
        as_str(k): int(float(as_str(v)))
        for k, v in (await redis.hgetall(keys.key("seen_bloom"))).items()
    }
    return [
        Generation(
            g,
            raw[f"n{g}"],
            raw[f"k{g}"],
            raw[f"m{g}"],
            raw[f"s{g}"],
            raw.get(f"c{g}", 0),
            raw.get(f"b{g}", 0),
        )
        for g in range(1, raw.get("g", 0) + 1)
    ]
