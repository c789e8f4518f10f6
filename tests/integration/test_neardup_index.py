"""SimhashIndex against a real redis-server (the session `redis_url` fixture).

Fingerprints are synthetic (the index sees only bits); sketches too: a "near"
sketch is a copy with some of its 16-bit slots redrawn, so its resemblance
with the original is known exactly.
"""

from __future__ import annotations

import itertools
import multiprocessing
import random
from collections.abc import Iterator

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawlproj.pipelines.content import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_RESEMBLANCE
from extensions.content.fingerprint import SKETCH_SIZE, hamming, resemblance
from extensions.content.simhash_index import DEFAULT_BLOCKS, Match, SimhashIndex, index_keys

K = DEFAULT_MAX_DISTANCE
BAR = DEFAULT_MIN_RESEMBLANCE
_prefixes = itertools.count()


def _sketch(rng: random.Random) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(2 * SKETCH_SIZE))


def _redraw(sketch: bytes, slots: int, rng: random.Random) -> bytes:
    """A copy of sketch with `slots` of its 16-bit slots set to new values."""
    out = bytearray(sketch)
    for slot in rng.sample(range(SKETCH_SIZE), slots):
        old = out[2 * slot : 2 * slot + 2]
        new = old
        while new == old:
            new = bytes([rng.getrandbits(8), rng.getrandbits(8)])
        out[2 * slot : 2 * slot + 2] = new
    return bytes(out)


def _new_index(url: str, name: str, **kw: int) -> SimhashIndex:
    return SimhashIndex(redis.Redis.from_url(url), name, K, BAR, **kw)


def _flip(fp: int, bits: list[int]) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


def _clusters(rng: random.Random, n_centers: int, per_center: int, spread: int) -> list[int]:
    """Fingerprints around random centres, each within `spread` bits of its centre."""
    out = []
    for _ in range(n_centers):
        center = rng.getrandbits(64)
        for _ in range(per_center):
            out.append(_flip(center, rng.sample(range(64), rng.randint(0, spread))))
    return out


@pytest.fixture
def index(redis_url) -> Iterator[SimhashIndex]:  # type: ignore[no-untyped-def]
    idx = _new_index(redis_url, f"test:neardup:{next(_prefixes)}")
    yield idx
    idx.clear()


# A populated index shared by the property test: 60 clusters of near-by
# fingerprints (so that many queries have several answers) plus uniform noise.
_RNG = random.Random(7)
CENTERS = [_RNG.getrandbits(64) for _ in range(60)]
POPULATION = sorted(
    {_flip(c, _RNG.sample(range(64), _RNG.randint(0, K + 4))) for c in CENTERS for _ in range(8)}
    | {_RNG.getrandbits(64) for _ in range(500)}
)
SKETCHES = {fp: _sketch(_RNG) for fp in POPULATION}


@pytest.fixture(scope="module")
def populated(redis_url) -> Iterator[SimhashIndex]:  # type: ignore[no-untyped-def]
    idx = _new_index(redis_url, "test:neardup:populated")
    idx.clear()
    idx.add_many([(fp, SKETCHES[fp], f"doc-{i}") for i, fp in enumerate(POPULATION)])
    yield idx
    idx.clear()


near_center = st.tuples(
    st.sampled_from(CENTERS), st.lists(st.integers(0, 63), max_size=K + 4, unique=True)
).map(lambda t: _flip(*t))
queries = st.one_of(st.integers(0, 2**64 - 1), near_center, st.sampled_from(POPULATION))


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=queries)
def test_probe_all_equals_brute_force(populated: SimhashIndex, query: int) -> None:
    expected = {(fp, hamming(fp, query)) for fp in POPULATION if hamming(fp, query) <= K}
    found = populated.probe_all(query)
    assert {(fp, d) for fp, _doc, d in found} == expected
    assert [d for *_, d in found] == sorted(d for *_, d in found)
    # The probe confirms only the candidate whose sketch resembles the query's.
    if expected:
        target = min(expected, key=lambda e: (e[1], e[0]))[0]
        near_sketch = _redraw(SKETCHES[target], 20, random.Random(query))
        match = populated.probe(query, near_sketch)
        assert match == Match(f"doc-{POPULATION.index(target)}", hamming(target, query),
                              resemblance(near_sketch, SKETCHES[target]))  # fmt: skip
    assert populated.probe(query, _sketch(random.Random(query))) is None


def test_add_and_probe_roundtrip(index: SimhashIndex) -> None:
    rng = random.Random(1)
    fp, sketch = 0x0123456789ABCDEF, _sketch(rng)
    assert index.probe(fp, sketch) is None
    index.add(fp, sketch, "https://example.com/a")
    index.add(fp, _sketch(rng), "https://example.com/dup")  # identical fp keeps the first
    assert index.probe(fp, sketch) == Match("https://example.com/a", 0, 1.0)
    assert index.probe(_flip(fp, list(range(K))), sketch) == Match("https://example.com/a", K, 1.0)
    assert index.probe(_flip(fp, list(range(K + 1))), sketch) is None
    # The bar: a sketch agreeing in just enough slots matches, one slot fewer does not.
    agree = int(BAR * SKETCH_SIZE + 0.999)
    assert index.probe(fp, _redraw(sketch, SKETCH_SIZE - agree, rng)) is not None
    assert index.probe(fp, _redraw(sketch, SKETCH_SIZE - agree + 1, rng)) is None
    assert len(index) == 1


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_check_and_add_sequential_matches_brute_force(redis_url, seed: int) -> None:  # type: ignore[no-untyped-def]
    idx = _new_index(redis_url, f"test:neardup:seq:{next(_prefixes)}")
    rng = random.Random(seed)
    try:
        admitted: dict[int, tuple[bytes, str]] = {}
        for i, fp in enumerate(_clusters(rng, 6, 5, K + 3)):
            # Half the pages of a cluster share its text, the others are distinct.
            center = fp >> 61
            sketch = _redraw(_sketch(random.Random(center)), rng.choice([0, 30, 100]), rng)
            ranked = sorted(
                ((resemblance(sketch, s), doc) for a, (s, doc) in admitted.items()
                 if hamming(a, fp) <= K and resemblance(sketch, s) >= BAR),
                reverse=True,
            )  # fmt: skip
            got = idx.check_and_add(fp, sketch, f"d{i}")
            if ranked:
                assert got is not None and got.resemblance == ranked[0][0]
                assert got.doc_id in {doc for r, doc in ranked if r == ranked[0][0]}
            else:
                assert got is None
                admitted.setdefault(fp, (sketch, f"d{i}"))
    finally:
        idx.clear()


def _race_worker(url: str, prefix: str, items: list[tuple[int, bytes]], tag: str, barrier) -> None:  # type: ignore[no-untyped-def]
    import redis

    idx = SimhashIndex(redis.Redis.from_url(url), prefix, K, BAR)
    for i, (fp, sketch) in enumerate(items):
        barrier.wait()  # lockstep: both workers offer their page of a pair at once
        idx.check_and_add(fp, sketch, f"{tag}-{i}")


def test_check_and_add_two_processes_never_admit_confirmed_near_duplicates(redis_url) -> None:  # type: ignore[no-untyped-def]
    # Pairs of close fingerprints (distinct, <= K bits apart) offered by two
    # workers at the same time: 200 pairs whose sketches confirm (one page of
    # each must be admitted) and 100 whose sketches differ (both must be).
    rng = random.Random(11)
    a_side, b_side, twins = [], [], []
    for n in range(300):
        x = rng.getrandbits(64)
        y = _flip(x, rng.sample(range(64), rng.randint(1, K)))
        sx = _sketch(rng)
        sy = _redraw(sx, 10, rng) if n < 200 else _sketch(rng)
        a_side.append((x, sx))
        b_side.append((y, sy))
        twins.append(n < 200)
    prefix = f"test:neardup:race:{next(_prefixes)}"
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [
        ctx.Process(target=_race_worker, args=(redis_url, prefix, items, tag, barrier))
        for items, tag in ((a_side, "a"), (b_side, "b"))
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    client = redis.Redis.from_url(redis_url)
    keys = index_keys(prefix, DEFAULT_BLOCKS)
    admitted = {int.from_bytes(f, "big") for f in client.hkeys(keys.docs)}
    try:
        for (x, _), (y, _), twin in zip(a_side, b_side, twins, strict=True):
            kept = (x in admitted) + (y in admitted)
            assert kept == (1 if twin else 2), (hex(x), hex(y), twin)
        assert client.hlen(keys.sketches) == len(admitted)
    finally:
        client.delete(*keys.all())


def test_bucket_cap_engages_on_templated_fingerprints(redis_url) -> None:  # type: ignore[no-untyped-def]
    # A templated site: every page shares the template's first 16 bits (so the
    # first table's bucket, whatever its width, is the same for all).
    idx = _new_index(redis_url, f"test:neardup:cap:{next(_prefixes)}", bucket_cap=50)
    try:
        rng = random.Random(3)
        template = 0xBEEF << 48
        fps = [template | rng.getrandbits(48) for _ in range(400)]
        sketches = [_sketch(rng) for _ in fps]
        idx.add_many(
            [(fp, sk, f"p{i}") for i, (fp, sk) in enumerate(zip(fps, sketches, strict=True))]
        )
        assert idx.bucket_overflows == 400 - 50
        bucket = idx.redis.hget(idx.keys.tables[0], idx.blocks[0].field(template))
        assert len(bucket) == 50 * 8
        # Refused from one table, still found through the others.
        assert idx.probe(fps[-1], sketches[-1]) == Match("p399", 0, 1.0)
    finally:
        idx.clear()


def test_rejects_decoded_client(redis_url) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="decode_responses"):
        SimhashIndex(
            redis.Redis.from_url(redis_url, decode_responses=True), "test:neardup:bad", K, BAR
        )
