"""SimhashIndex against a real redis-server (the session `redis_url` fixture)."""

from __future__ import annotations

import itertools
import multiprocessing
import random
from collections.abc import Iterator

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extensions.neardup import DEFAULT_MAX_DISTANCE, hamming
from extensions.neardup_index import SimhashIndex, index_keys

K = DEFAULT_MAX_DISTANCE
_prefixes = itertools.count()


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
    idx = SimhashIndex(redis.Redis.from_url(redis_url), f"test:neardup:{next(_prefixes)}")
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


@pytest.fixture(scope="module")
def populated(redis_url) -> Iterator[SimhashIndex]:  # type: ignore[no-untyped-def]
    idx = SimhashIndex(redis.Redis.from_url(redis_url), "test:neardup:populated")
    idx.clear()
    idx.add_many([(fp, f"doc-{i}") for i, fp in enumerate(POPULATION)])
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
    nearest = populated.probe(query)
    if expected:
        assert nearest is not None and hamming(nearest[0], query) == min(d for _, d in expected)
        assert nearest[1] == f"doc-{POPULATION.index(nearest[0])}"
    else:
        assert nearest is None


def test_add_and_probe_roundtrip(index: SimhashIndex) -> None:
    fp = 0x0123456789ABCDEF
    assert index.probe(fp) is None
    index.add(fp, "https://example.com/a")
    index.add(fp, "https://example.com/dup")  # identical fp keeps the first doc_id
    assert index.probe(fp) == (fp, "https://example.com/a")
    assert index.probe(_flip(fp, list(range(K)))) == (fp, "https://example.com/a")
    assert index.probe(_flip(fp, list(range(K + 1)))) is None
    assert len(index) == 1


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_check_and_add_sequential_matches_brute_force(redis_url, seed: int) -> None:  # type: ignore[no-untyped-def]
    idx = SimhashIndex(redis.Redis.from_url(redis_url), f"test:neardup:seq:{next(_prefixes)}")
    try:
        admitted: dict[int, str] = {}
        for i, fp in enumerate(_clusters(random.Random(seed), 6, 5, K + 3)):
            blockers = [doc for a, doc in admitted.items() if hamming(a, fp) <= K]
            got = idx.check_and_add(fp, f"d{i}")
            if blockers:
                assert got in blockers
            else:
                assert got is None
                admitted[fp] = f"d{i}"
    finally:
        idx.clear()


def _race_worker(url: str, prefix: str, fps: list[int], tag: str, barrier) -> None:  # type: ignore[no-untyped-def]
    import redis

    idx = SimhashIndex(redis.Redis.from_url(url), prefix)
    for i, fp in enumerate(fps):
        barrier.wait()  # lockstep: both workers offer near-duplicates at once
        idx.check_and_add(fp, f"{tag}-{i}")


def test_check_and_add_two_processes_never_admit_near_duplicates(redis_url) -> None:  # type: ignore[no-untyped-def]
    # Pairs of near-duplicates (distinct fingerprints, <= K bits apart): worker
    # a offers one of each pair while worker b offers the other, at the same time.
    rng = random.Random(11)
    pairs = []
    for _ in range(300):
        x = rng.getrandbits(64)
        pairs.append((x, _flip(x, rng.sample(range(64), rng.randint(1, K)))))
    prefix = f"test:neardup:race:{next(_prefixes)}"
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [
        ctx.Process(
            target=_race_worker,
            args=(redis_url, prefix, [p[side] for p in pairs], tag, barrier),
        )
        for side, tag in ((0, "a"), (1, "b"))
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    client = redis.Redis.from_url(redis_url)
    keys = index_keys(prefix, 4)
    admitted = [int.from_bytes(f, "big") for f in client.hkeys(keys.docs)]
    try:
        assert len(admitted) == len(pairs)  # exactly one page of every pair
        for a, b in itertools.combinations(admitted, 2):
            assert hamming(a, b) > K, (hex(a), hex(b))
    finally:
        client.delete(*keys.all())


def test_bucket_cap_engages_on_templated_fingerprints(redis_url) -> None:  # type: ignore[no-untyped-def]
    # A templated site: every page shares the template's first 16 bits.
    idx = SimhashIndex(
        redis.Redis.from_url(redis_url), f"test:neardup:cap:{next(_prefixes)}", bucket_cap=50
    )
    try:
        rng = random.Random(3)
        template = 0xBEEF << 48
        fps = [template | rng.getrandbits(48) for _ in range(400)]
        idx.add_many([(fp, f"p{i}") for i, fp in enumerate(fps)])
        assert idx.bucket_overflows == 400 - 50
        bucket = idx.redis.hget(idx.keys.tables[0], (0xBEEF).to_bytes(2, "big"))
        assert len(bucket) == 50 * 8
        # Refused from one table, still found through the other three.
        assert idx.probe(fps[-1]) == (fps[-1], "p399")
    finally:
        idx.clear()


def test_rejects_decoded_client(redis_url) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="decode_responses"):
        SimhashIndex(redis.Redis.from_url(redis_url, decode_responses=True), "test:neardup:bad")
