"""Benchmark near-duplicate detection (run by hand, prints numbers).

    .venv/bin/python bench/bench_neardup.py [--n 1000000] [--probes 2000] [--shards S]

1. Throughput on ~10 KB HTML pages (corpus prose) of each step the pipeline
   runs per page: main-text extraction (resiliparse, furniture filter, visible
   text fallback), the signature (tokens, 3-shingle simhash, 5-shingle sketch,
   text hash), and all of it together; the old visible text for comparison.
2. SimhashIndex with N fingerprints (and their 256-byte sketches) in a
   redis-server started here on a unix socket (no TCP port), stopped by PID at
   the end: bulk-load time, memory, probe / check_and_add latency p50/p99 (the
   probe includes reading and comparing the candidates' sketches), for uniform
   random fingerprints and for a templated corpus (fingerprints clustered
   around shared templates). ``--shards S``: the index spread over S shard
   tags as on a sharded crawl (simhash_keys.py), all in the one redis-server:
   the client's cost of the spread layout (more commands, a commit and then
   the writes); CPU per call is this process's.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extensions.content.fingerprint import SKETCH_BYTES, signature
from extensions.content.main_text import page_text
from extensions.content.neardup_config import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_RESEMBLANCE
from extensions.content.simhash_index import SimhashIndex
from extensions.content.visible_text import visible_text
from tests.corpus import neardup_corpus


@contextmanager
def redis_server() -> Iterator[redis.Redis]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-neardup-"))
    sock = str(tmp / "redis.sock")
    binary = Path(sys.executable).with_name("redis-server")
    argv = [str(binary), "--port", "0", "--unixsocket", sock, "--save", "",
            "--appendonly", "no", "--dir", str(tmp)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    try:
        client = redis.Redis(unix_socket_path=sock)
        for _ in range(500):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.01)
        yield client
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


def ten_kb_pages(n: int) -> list[str]:
    """Pages of the corpus site, each grown to ~10 KB of HTML."""
    paragraphs = neardup_corpus.paragraph_stream()
    rng = random.Random(1)
    pages = []
    for i in range(n):
        chosen: list[str] = []
        start = rng.randrange(len(paragraphs))
        while sum(len(p) for p in chosen) < 8500:
            chosen.append(paragraphs[(start + len(chosen)) % len(paragraphs)])
        spec = neardup_corpus._Spec(chosen, neardup_corpus.ADS[i % 10], i)
        pages.append(neardup_corpus.render_page(f"Page {i}", spec))
    return pages


def _rate(label: str, n: int, seconds: float) -> None:
    print(f"  {label:28s}: {n / seconds:8.0f} pages/s ({seconds / n * 1e3:.2f} ms)")


def _best(fn: Callable[[], object], repeats: int = 3) -> float:
    """Fastest of `repeats` runs, in seconds: the figure least disturbed by the
    other work of a shared machine."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def bench_fingerprints(n_pages: int = 300) -> None:
    pages = ten_kb_pages(n_pages)
    size = sum(len(p.encode()) for p in pages) / len(pages)
    texts = [page_text(p).text for p in pages]
    extract = _best(lambda: [page_text(p) for p in pages])
    sign = _best(lambda: [signature(t) for t in texts])
    both = _best(lambda: [signature(page_text(p).text) for p in pages])
    old = _best(lambda: [visible_text(p) for p in pages])
    words = np.mean([len(t.split()) for t in texts])
    print(f"pages: {n_pages} x {size / 1024:.1f} KB HTML, {words:.0f} words of main text "
          "(best of 3 runs)")  # fmt: skip
    _rate("main text (extraction)", n_pages, extract)
    _rate("signature (text given)", n_pages, sign)
    _rate("extraction + signature", n_pages, both)
    _rate("old: visible_text alone", n_pages, old)


def latencies(fn: Callable[[int], object], queries: list[int]) -> str:
    times = []
    cpu = time.process_time()
    for q in queries:
        t = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t)
    cpu_ms = (time.process_time() - cpu) / len(queries) * 1e3
    p50, p99 = np.percentile(times, [50, 99]) * 1e3
    return f"p50 {p50:.3f} ms  p99 {p99:.3f} ms  client CPU {cpu_ms:.3f} ms"


def flip(fp: int, rng: random.Random, max_bits: int) -> int:
    for b in rng.sample(range(64), rng.randint(0, max_bits)):
        fp ^= 1 << b
    return fp


def _sketch(rng: random.Random) -> bytes:
    return rng.getrandbits(8 * SKETCH_BYTES).to_bytes(SKETCH_BYTES, "big")


def load(index: SimhashIndex, fps: list[int], sketches: list[bytes], client: redis.Redis) -> None:
    t = time.perf_counter()
    items = [
        (fp, sketches[i % len(sketches)], f"https://site.test/{i}") for i, fp in enumerate(fps)
    ]
    index.add_many(items)
    took = time.perf_counter() - t
    mem = client.info("memory")["used_memory"] / 2**20
    print(f"  loaded {len(fps)} in {took:.1f} s ({len(fps) / took:.0f}/s), redis {mem:.0f} MiB, "
          f"bucket_overflows {index.bucket_overflows}")  # fmt: skip


def bench_index(
    client: redis.Redis, name: str, fps: list[int], n_probes: int, shards: int = 1
) -> None:
    rng = random.Random(5)
    spread = [f"{{bench:{name}:p{i}}}:neardup" for i in range(shards)] if shards > 1 else []
    index = SimhashIndex(
        client, f"bench:{name}", DEFAULT_MAX_DISTANCE, DEFAULT_MIN_RESEMBLANCE, shards=spread
    )
    index.clear()
    print(f"{name}: {len(fps)} fingerprints, max_distance {DEFAULT_MAX_DISTANCE}, "
          f"{sum(len(b.masks) for b in index.blocks)} look-ups per probe, "
          f"{shards} shard(s)")  # fmt: skip
    # 4,096 distinct sketches cycled over the fingerprints: Redis memory is that of
    # N sketches all the same (each stored in full), and candidates rarely confirm.
    sketches = [_sketch(rng) for _ in range(4096)]
    load(index, fps, sketches, client)
    uniform = [rng.getrandbits(64) for _ in range(n_probes)]
    picks = [rng.randrange(len(fps)) for _ in range(n_probes)]
    near = [flip(fps[i], rng, DEFAULT_MAX_DISTANCE) for i in picks]
    own = {q: sketches[i % len(sketches)] for q, i in zip(near, picks, strict=True)}
    hits = sum(index.probe(q, own[q]) is not None for q in near[:200])
    probe_u = latencies(lambda q: index.probe(q, _sketch(rng)), uniform)
    print(f"  probe uniform queries      : {probe_u}")
    print(f"  probe near-duplicate query : {latencies(lambda q: index.probe(q, own[q]), near)}"
          f"  (confirmed {hits}/200)")  # fmt: skip
    fresh = latencies(lambda q: index.check_and_add(q, _sketch(rng), "new"), uniform)
    print(f"  check_and_add uniform      : {fresh}")
    print(f"  check_and_add near-dup     : "
          f"{latencies(lambda q: index.check_and_add(q, own[q], 'new'), near)}")  # fmt: skip
    index.clear()


def templated(n: int, rng: random.Random) -> list[int]:
    """n fingerprints in clusters of 5000 within 6 bits of a template's: pages of
    one template with little content of their own (calendars, tag pages), so
    that the template's block values collect far more than bucket_cap pages."""
    out = []
    while len(out) < n:
        template = rng.getrandbits(64)
        out.extend(flip(template, rng, 6) for _ in range(5000))
    return out[:n]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--probes", type=int, default=2000)
    parser.add_argument("--only", choices=["text", "uniform", "templated"])
    parser.add_argument("--shards", type=int, default=1)
    args = parser.parse_args()
    if args.only in (None, "text"):
        bench_fingerprints()
    rng = random.Random(9)
    with redis_server() as client:
        if args.only in (None, "uniform"):
            uniform = [rng.getrandbits(64) for _ in range(args.n)]
            bench_index(client, "uniform", uniform, args.probes, args.shards)
        if args.only in (None, "templated"):
            bench_index(client, "templated", templated(args.n, rng), args.probes, args.shards)


if __name__ == "__main__":
    main()
