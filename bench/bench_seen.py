"""Benchmark URL-seen (run by hand, prints numbers).

    .venv/bin/python bench/bench_seen.py [--capacity 10000000] [--n 1000000]

1. Raw pybloomfiltermmap3 add / check ops/s on a file-backed filter of --capacity keys.
2. UrlSeen.record / split keys/s in batches of 1000 (the frontier's path), both modes.
3. Memory: Bloom bytes per key of design capacity (mmap'd file) at 10 / 20 bits per key,
   and the exact-mode LRU's Python heap bytes per confirmed key (tracemalloc).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pybloomfilter import BloomFilter

from extensions.admission.seen import SeenConfig, UrlSeen, allocated_fp_rate, theoretical_fp_rate

BATCH = 1000


def keys_of(rng: random.Random, n: int) -> list[str]:
    blob = rng.randbytes(8 * n).hex()
    return [blob[i : i + 16] for i in range(0, 16 * n, 16)]


def rate(n: int, run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return n / (time.perf_counter() - start)


def bench_raw(tmp: Path, capacity: int, keys: list[str], absent: list[str]) -> None:
    for bits in (10, 20):
        bloom = BloomFilter(capacity, theoretical_fp_rate(bits), str(tmp / f"raw{bits}.bloom"))
        add, has = bloom.add, bloom.__contains__
        adds = rate(len(keys), lambda add=add: [add(k) for k in keys])
        hits = rate(len(keys), lambda has=has: sum(map(has, keys)))
        misses = rate(len(absent), lambda has=has: sum(map(has, absent)))
        size = (tmp / f"raw{bits}.bloom").stat().st_size
        print(
            f"raw {bits:2d} bits/key k={bloom.num_hashes:2d}: add {adds / 1e6:5.2f} M/s, "
            f"check hit {hits / 1e6:5.2f} M/s, miss {misses / 1e6:5.2f} M/s; "
            f"file {size / 2**20:6.1f} MiB = {size / capacity:5.3f} bytes/key, "
            f"p at capacity {allocated_fp_rate(bloom):.2e} (ideal {theoretical_fp_rate(bits):.2e})"
        )
        bloom.close()


def bench_url_seen(tmp: Path, capacity: int, keys: list[str], absent: list[str]) -> None:
    batches = [keys[i : i + BATCH] for i in range(0, len(keys), BATCH)]
    fresh = [absent[i : i + BATCH] for i in range(0, len(absent), BATCH)]
    for exact in (True, False):
        config = SeenConfig(capacity=capacity, exact=exact, worker_id=f"e{int(exact)}")
        with UrlSeen(config, tmp) as seen:
            recorded = rate(len(keys), lambda s=seen: [s.record(b) for b in batches])
            repeats = rate(len(keys), lambda s=seen: [s.split(b) for b in batches])
            new = rate(len(absent), lambda s=seen: [s.split(b) for b in fresh])
        print(
            f"UrlSeen exact={exact!s:5}: record {recorded / 1e6:5.2f} M keys/s, split repeats "
            f"{repeats / 1e6:5.2f} M keys/s, split new {new / 1e6:5.2f} M keys/s"
        )


def lru_bytes_per_key(n: int) -> float:
    keys = keys_of(random.Random(3), n)  # the keys exist anyway: the frontier made them
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    seen_dir = Path(tempfile.mkdtemp(prefix="bench-seen-lru-"))
    try:
        with UrlSeen(SeenConfig(capacity=2 * n, local_cache=n), seen_dir) as seen:
            seen.record(keys)
            after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        shutil.rmtree(seen_dir, ignore_errors=True)
    # The keys are shared with the caller's list: this is the LRU's own structure.
    return (after - before) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=10_000_000)
    parser.add_argument("--n", type=int, default=1_000_000)
    args = parser.parse_args()
    rng = random.Random(1)
    keys, absent = keys_of(rng, args.n), keys_of(rng, args.n)
    tmp = Path(tempfile.mkdtemp(prefix="bench-seen-"))
    try:
        print(f"capacity {args.capacity:,} keys, {args.n:,} keys added / probed, batch {BATCH}")
        bench_raw(tmp, args.capacity, keys, absent)
        bench_url_seen(tmp, args.capacity, keys, absent)
        per_key = lru_bytes_per_key(min(args.n, 100_000))
        print(f"exact-mode LRU: {per_key:.0f} bytes per confirmed key (keys themselves shared)")
        print(f"               {per_key + 65:.0f} bytes per key if it holds the only reference")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
