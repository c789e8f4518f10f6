"""URL-seen: a per-worker Bloom filter (pybloomfiltermmap3) in front of the shard's Bloom
filter in Redis (admission/bloom.py, checked and set by the admit script: the truth across
workers). `split` picks the keys of a batch that need it; `record` learns the keys sent.

SEEN_EXACT=True: a key is dropped locally only if THIS process saw Redis confirm it in this
run (an LRU of SEEN_LOCAL_CACHE keys); every other key is sent, and Redis's exact set
settles its Bloom's hits: lossless. SEEN_EXACT=False (default): Bloom hits are dropped
(`seen/dropped_local`), so a false positive loses that page, about p of the new URLs, as
Redis's own Bloom does. A batch goes to Redis in one call whatever is dropped: this filter
saves Lua work on duplicates, not round trips.

Sizing: p = exp(-bits * ln2^2), optimal for SEEN_BITS_PER_KEY. pybloomfiltermmap3 0.6.3 takes
k = floor(log2(1/p)) (13 at 20 bits/key, not 13.86; 6 at 10, not 6.93) and num_bits = n * bits
+ at most k + 7 (k * ceil(n * bits / k), whole bytes; 200_000_008 for 10M keys at 20), so p at
capacity is 6.79e-5 (ideal 6.71e-5) at 20 bits/key, 8.44e-3 (8.19e-3) at 10: `allocated_fp_rate`.

Generations (scalable Bloom filter, Almeida et al. 2007): at its design capacity the current
file is frozen and a new one starts, SEEN_GROWTH x the capacity and p halved (+1.44 bits/key);
lookups check all, so the summed rate stays under 2p. The count is approx_len at open (it
survives reopen; len() does not) plus the keys this run added.

Files in data_dir/seen: `<worker_id>.lock` (exclusive flock = one writer per Bloom file; the
kernel drops it when the holder dies) and `<worker_id>.g<NNN>.bloom`. A restarted worker takes
the lowest free id and reopens its files: a resumed crawl keeps its Bloom. Files only hold keys
of the shared exact set, so any worker may inherit any id; a lost or corrupt file only turns
keys into Bloom misses, which Redis answers. Create UrlSeen after forking (one writer per file).
The files belong to one crawl, like the seen set: a crawl that starts a new seen set needs a new
data_dir/seen, else SEEN_EXACT=False would drop what the old crawl saw.
"""

from __future__ import annotations

import dataclasses
import fcntl
import logging
import math
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pybloomfilter import BloomFilter

from extensions.config import Setting, Table, at_least, between, matches, one_of, read

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

LN2 = math.log(2)
FILL_WARNING = 0.8  # share of a generation's design capacity that logs the first warning
TIGHTENING = 0.5  # each new generation's error rate relative to the previous one
MAX_AUTO_WORKERS = 1024  # w0 .. w1023 before giving up on a free worker id
# A file name prefix in data_dir/seen ("" = pick one): no "." first, no path separator.
_WORKER_ID = r"(?:[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63})?"
_GENERATION_FILE = re.compile(r"g(\d+)\.bloom")


class StatsLike(Protocol):
    """The part of Scrapy's StatsCollector that UrlSeen uses."""

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None: ...

    def set_value(self, key: str, value: Any) -> None: ...


def theoretical_fp_rate(bits_per_key: float) -> float:
    """False-positive rate of an optimal Bloom filter at capacity: exp(-bits * ln2^2)."""
    return math.exp(-bits_per_key * LN2 * LN2)


def allocated_fp_rate(bloom: BloomFilter) -> float:
    """Rate at capacity for the filter as allocated (its k and m): (1 - exp(-k n / m))^k."""
    k = bloom.num_hashes
    return float((1.0 - math.exp(-k * bloom.capacity / bloom.num_bits)) ** k)


@dataclasses.dataclass(frozen=True)
class SeenConfig:
    """SEEN_* settings (SEEN below reads and checks them). The defaults, for code that
    builds one directly, equal crawlproj/settings.py (tests/unit/test_config.py)."""

    bits_per_key: float = 20.0  # SEEN_BITS_PER_KEY
    capacity: int = 10_000_000  # SEEN_CAPACITY: keys of the first generation
    exact: bool = False  # SEEN_EXACT
    growth: int = 2  # SEEN_GROWTH: capacity factor of each new generation (1 or 2)
    local_cache: int = 100_000  # SEEN_LOCAL_CACHE: confirmed keys kept in the LRU (exact mode)
    worker_id: str = ""  # SEEN_WORKER_ID: '' = lowest free w0, w1, ...

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SeenConfig:
        """ValueError names the bad setting."""
        return read(SEEN, settings)

    def generation_params(self, number: int) -> tuple[int, float]:
        """(capacity, bits per key) of generation `number` (1-based)."""
        extra_bits = (number - 1) * math.log(1 / TIGHTENING) / (LN2 * LN2)
        return self.capacity * self.growth ** (number - 1), self.bits_per_key + extra_bits


SEEN = Table(
    SeenConfig,
    Setting("SEEN_BITS_PER_KEY", "bits_per_key", float, between(2, 64)),
    Setting("SEEN_CAPACITY", "capacity", int, at_least(1)),
    Setting("SEEN_EXACT", "exact", bool),
    Setting("SEEN_GROWTH", "growth", int, one_of(1, 2)),
    Setting("SEEN_LOCAL_CACHE", "local_cache", int, at_least(0)),
    Setting(
        "SEEN_WORKER_ID",
        "worker_id",
        str,
        matches(_WORKER_ID, "'' or 1-64 of [A-Za-z0-9_.-], no '.' first"),
    ),
)


@dataclasses.dataclass
class _Generation:
    number: int
    bloom: BloomFilter
    count: int  # approx_len at open + keys this run added as new
    next_alert: float = 0.0  # count at which the next capacity warning fires

    def __post_init__(self) -> None:
        self.next_alert = max(1, math.ceil(self.capacity * FILL_WARNING))

    @property
    def capacity(self) -> int:
        return int(self.bloom.capacity)


def lock_worker_id(seen_dir: Path, wanted: str) -> tuple[str, int]:
    """Lock `<id>.lock` for this process: `wanted`, else the lowest free w<N>. Returns (id, fd)."""
    candidates = [wanted] if wanted else [f"w{i}" for i in range(MAX_AUTO_WORKERS)]
    for worker_id in candidates:
        path = seen_dir / f"{worker_id}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            # flock, not lockf: two opens in one process conflict too, and the lock is
            # tied to this open file, not dropped when any other fd on the file closes.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = path.read_text().strip() or "?"
            os.close(fd)
            if wanted:
                raise RuntimeError(
                    f"SEEN_WORKER_ID {wanted!r} is in use by live process {holder} ({path}); "
                    "give each worker its own SEEN_WORKER_ID or leave it empty"
                ) from None
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return worker_id, fd
    raise RuntimeError(f"no free URL-seen worker id in {seen_dir} (w0..w{MAX_AUTO_WORKERS - 1})")


class UrlSeen:
    """One per worker process: Bloom generations in front of the exact seen set in Redis."""

    def __init__(self, config: SeenConfig, data_dir: Path, stats: StatsLike | None = None) -> None:
        self.config = config
        self.stats = stats
        self.dir = Path(data_dir) / "seen"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.worker_id, self._lock_fd = lock_worker_id(self.dir, config.worker_id)
        self._pid = os.getpid()
        # Keys Redis confirmed to this process; only exact mode drops on them (False drops
        # on any Bloom hit, which covers them).
        self._confirmed: OrderedDict[str, None] | None = (
            OrderedDict() if config.exact and config.local_cache > 0 else None
        )
        self._generations: list[_Generation] = []
        try:
            self._open_generations()
        except BaseException:
            self.close()
            raise
        logger.info(
            "URL-seen %s: %d generation(s), ~%d keys, exact=%s, in %s",
            self.worker_id, len(self._generations), self.approx_len(), config.exact, self.dir,
        )  # fmt: skip

    @classmethod
    def from_settings(
        cls,
        settings: BaseSettings,
        data_dir: Path,
        stats: StatsLike | None = None,
        worker_id: str = "",
    ) -> UrlSeen:
        """Reads and validates SEEN_*; a non-empty `worker_id` overrides SEEN_WORKER_ID."""
        if worker_id:  # checked like the setting it overrides
            settings = settings.copy()
            settings.set("SEEN_WORKER_ID", worker_id, priority="cmdline")
        return cls(SeenConfig.from_settings(settings), data_dir, stats)

    # -- the two calls the frontier makes per batch -----------------------------------

    def split(self, keys: Sequence[str]) -> tuple[list[int], list[int]]:
        """(indexes to send to Redis, indexes dropped locally as seen). '' is always sent."""
        self._check_owner()
        confirmed = self._confirmed
        maybe_seen = self._membership()
        drop_hits = not self.config.exact
        send: list[int] = []
        drop: list[int] = []
        hits = misses = local = unfiltered = 0
        for i, key in enumerate(keys):
            if not key:  # dont_filter: the admit script skips SADD too
                unfiltered += 1
                send.append(i)
            elif confirmed is not None and key in confirmed:
                confirmed.move_to_end(key)
                local += 1
                drop.append(i)
            elif maybe_seen(key):
                hits += 1
                (drop if drop_hits else send).append(i)
            else:
                misses += 1
                send.append(i)
        self._inc("seen/unfiltered", unfiltered)
        self._inc("seen/local_hit", local)
        self._inc("seen/bloom/hit", hits)
        self._inc("seen/bloom/miss", misses)
        self._inc("seen/bloom/hit_sent", 0 if drop_hits else hits)
        self._inc("seen/sent", len(send))
        self._inc("seen/dropped_local", len(drop))
        return send, drop

    def record(self, keys: Sequence[str]) -> None:
        """Keys the exact set admitted or confirmed as seen: into the Bloom (and the LRU)."""
        self._check_owner()
        recorded = added = 0
        gen, older = self._generations[-1], [g.bloom for g in self._generations[:-1]]
        for key in keys:
            if not key:
                continue
            recorded += 1
            if self._confirmed is not None:
                self._remember(key)
            if older and any(key in bloom for bloom in older):
                continue  # already counted by an older generation: spare the current one
            if not gen.bloom.add(key):
                added += 1
                gen.count += 1
                if gen.count >= gen.next_alert:
                    self._on_fill(gen)
                    gen, older = self._generations[-1], [g.bloom for g in self._generations[:-1]]
        self._inc("seen/recorded", recorded)
        self._inc("seen/bloom/added", added)
        if added:
            self._set("seen/bloom/fill_ratio", round(self.fill_ratio(), 4))

    # -- introspection and lifecycle ----------------------------------------------------

    def fill_ratio(self) -> float:
        """Keys in the current generation / its design capacity (0.8 warns, 1.0 rolls over)."""
        gen = self._generations[-1]
        return gen.count / gen.capacity

    def approx_len(self) -> int:
        """Keys in all generations (Bloom estimate at open, plus exact counting since)."""
        return sum(gen.count for gen in self._generations)

    @property
    def generations(self) -> int:
        return len(self._generations)

    def close(self) -> None:
        """Flush and close the files, release the worker id. Idempotent."""
        for gen in self._generations:
            if not gen.bloom.read_only:
                gen.bloom.sync()
            gen.bloom.close()
        self._generations = []
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = -1

    def __enter__(self) -> UrlSeen:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------

    def _membership(self) -> Callable[[str], bool]:
        """Bloom test over every generation, without a generator when there is only one."""
        blooms = [gen.bloom for gen in reversed(self._generations)]
        if len(blooms) == 1:
            return blooms[0].__contains__
        return lambda key: any(key in bloom for bloom in blooms)

    def _remember(self, key: str) -> None:
        confirmed = self._confirmed
        assert confirmed is not None
        if key in confirmed:
            confirmed.move_to_end(key)
            return
        confirmed[key] = None
        if len(confirmed) > self.config.local_cache:
            confirmed.popitem(last=False)

    def _path(self, number: int) -> Path:
        return self.dir / f"{self.worker_id}.g{number:03d}.bloom"

    def _open_generations(self) -> None:
        numbers = []
        for path in self.dir.glob(f"{self.worker_id}.g*.bloom"):
            match = _GENERATION_FILE.fullmatch(path.name[len(self.worker_id) + 1 :])
            if match:
                numbers.append(int(match.group(1)))
        numbers.sort()
        for number in numbers:
            self._reopen(number, writable=number == numbers[-1])
        if not self._generations:
            self._start_generation(numbers[-1] + 1 if numbers else 1)
        gen = self._generations[-1]
        self._set("seen/bloom/generations", len(self._generations))
        if gen.count >= gen.next_alert:
            self._on_fill(gen)  # reopened past a threshold: say so again, once per run

    def _reopen(self, number: int, writable: bool) -> None:
        path = self._path(number)
        try:
            bloom = BloomFilter.open(str(path), "rw" if writable else "r")
        except (OSError, ValueError) as exc:
            # Losing a generation only turns its keys into Bloom misses, which Redis answers.
            logger.warning("URL-seen: dropping unreadable Bloom file %s (%s)", path, exc)
            path.unlink(missing_ok=True)
            return
        self._generations.append(_Generation(number, bloom, int(bloom.approx_len)))

    def _start_generation(self, number: int) -> None:
        capacity, bits = self.config.generation_params(number)
        path = self._path(number)
        bloom = BloomFilter(capacity, theoretical_fp_rate(bits), str(path))
        self._generations.append(_Generation(number, bloom, 0))
        self._set("seen/bloom/generations", len(self._generations))
        logger.info(
            "URL-seen %s: generation %d in %s: %d keys at %.2f bits/key, k=%d, %d bytes",
            self.worker_id, number, path.name, capacity, bits, bloom.num_hashes,
            bloom.num_bits // 8,
        )  # fmt: skip

    def _on_fill(self, gen: _Generation) -> None:
        """Crossed 80% or 100% of the current generation's design capacity."""
        if gen.count < gen.capacity:
            logger.warning(
                "URL-seen %s: Bloom generation %d at %d%% of its %d keys; a new one starts at "
                "100%% (raise SEEN_CAPACITY to avoid it)",
                self.worker_id, gen.number, 100 * gen.count // gen.capacity, gen.capacity,
            )  # fmt: skip
            self._set("seen/bloom/fill_80", gen.number)
            gen.next_alert = gen.capacity
            return
        logger.warning(
            "URL-seen %s: Bloom generation %d is full (%d keys); starting generation %d",
            self.worker_id, gen.number, gen.count, gen.number + 1,
        )  # fmt: skip
        self._set("seen/bloom/full", gen.number)
        gen.next_alert = math.inf  # never again for this one
        self._freeze(gen)
        self._start_generation(gen.number + 1)

    def _freeze(self, gen: _Generation) -> None:
        """Reopen a full generation read-only: it is only ever checked from now on."""
        gen.bloom.sync()
        path = gen.bloom.filename
        gen.bloom.close()
        gen.bloom = BloomFilter.open(path, "r")

    def _check_owner(self) -> None:
        if os.getpid() != self._pid:
            raise RuntimeError(
                "UrlSeen was created before a fork; create it in each worker process "
                "(one writer per Bloom file)"
            )
        if not self._generations:
            raise RuntimeError("UrlSeen is closed")

    def _inc(self, key: str, count: int) -> None:
        if self.stats is not None and count:
            self.stats.inc_value(key, count)

    def _set(self, key: str, value: Any) -> None:
        if self.stats is not None:
            self.stats.set_value(key, value)
