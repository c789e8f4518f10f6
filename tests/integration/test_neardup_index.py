"""SimhashIndex against a real redis-server (the session `redis_url` fixture).

Fingerprints are synthetic (the index sees only bits); sketches too: a "near"
sketch is a copy with some of its 16-bit slots redrawn, so its resemblance
with the original is known exactly. Every behaviour is checked in both layouts
(simhash_keys.py): every key under one tag, and spread over five shard tags
(commit ring, then writes in other slots) as on a sharded crawl.
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

from extensions.content.fingerprint import SKETCH_SIZE, hamming, resemblance
from extensions.content.neardup_config import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_RESEMBLANCE
from extensions.content.simhash_index import DEFAULT_BLOCKS, Match, SimhashIndex
from extensions.content.simhash_keys import RING_SIZE, crawl_index_shards, index_keys
from extensions.state.keys import FrontierKeys

K = DEFAULT_MAX_DISTANCE
BAR = DEFAULT_MIN_RESEMBLANCE
_prefixes = itertools.count()
LAYOUTS = ("one_slot", "sharded")


def _shards(name: str, layout: str) -> list[str]:
    return [f"{{{name}:p{i}}}:neardup" for i in range(5)] if layout == "sharded" else []


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


def _new_index(url: str, name: str, layout: str = "one_slot", **kw: int) -> SimhashIndex:
    client = redis.Redis.from_url(url)
    return SimhashIndex(client, name, K, BAR, shards=_shards(name, layout), **kw)


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


@pytest.fixture(params=LAYOUTS)
def index(redis_url, request) -> Iterator[SimhashIndex]:  # type: ignore[no-untyped-def]
    idx = _new_index(redis_url, f"test:neardup:{next(_prefixes)}", request.param)
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


@pytest.fixture(scope="module", params=LAYOUTS)
def populated(redis_url, request) -> Iterator[SimhashIndex]:  # type: ignore[no-untyped-def]
    idx = _new_index(redis_url, f"test:neardup:populated:{request.param}", request.param)
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


@pytest.mark.parametrize("layout", LAYOUTS)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_check_and_add_sequential_matches_brute_force(redis_url, layout: str, seed: int) -> None:  # type: ignore[no-untyped-def]
    idx = _new_index(redis_url, f"test:neardup:seq:{next(_prefixes)}", layout)
    rng = random.Random(seed)
    try:
        admitted: dict[int, tuple[bytes, str]] = {}  # the index keeps a fingerprint's first
        everyone: list[tuple[int, bytes, str]] = []
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
            elif got is not None and layout == "sharded":
                # The ring also holds a page whose fingerprint was taken (not indexed
                # again): a sharded commit checks it, and it is a confirmed match.
                assert any(
                    a == got.doc_id and hamming(b, fp) <= K and resemblance(sketch, s) >= BAR
                    for b, s, a in everyone
                )
            else:
                assert got is None
                admitted.setdefault(fp, (sketch, f"d{i}"))
                everyone.append((fp, sketch, f"d{i}"))
    finally:
        idx.clear()


def _race_worker(
    url: str, prefix: str, layout: str, items: list[tuple[int, bytes]], tag: str, barrier
) -> None:  # type: ignore[no-untyped-def]
    idx = _new_index(url, prefix, layout)
    for i, (fp, sketch) in enumerate(items):
        barrier.wait()  # lockstep: both workers offer their page of a pair at once
        idx.check_and_add(fp, sketch, f"{tag}-{i}")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_check_and_add_two_processes_never_admit_confirmed_near_duplicates(
    redis_url, layout: str
) -> None:  # type: ignore[no-untyped-def]
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
        ctx.Process(target=_race_worker, args=(redis_url, prefix, layout, items, tag, barrier))
        for items, tag in ((a_side, "a"), (b_side, "b"))
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    client = redis.Redis.from_url(redis_url)
    keys = index_keys(prefix, DEFAULT_BLOCKS, _shards(prefix, layout))
    shards = range(len(keys.shards))
    admitted = {int.from_bytes(f, "big") for s in shards for f in client.hkeys(keys.docs(s))}
    try:
        for (x, _), (y, _), twin in zip(a_side, b_side, twins, strict=True):
            kept = (x in admitted) + (y in admitted)
            assert kept == (1 if twin else 2), (hex(x), hex(y), twin)
        assert sum(client.hlen(keys.sketches(s)) for s in shards) == len(admitted)
    finally:
        client.delete(*keys.all())


def test_a_sharded_commit_sees_an_add_whose_writes_have_not_landed(redis_url) -> None:  # type: ignore[no-untyped-def]
    # Sharded, an add is committed on the ring's slot and then written to the
    # tables: a probe in between misses it, and the commit must catch it.
    idx = _new_index(redis_url, f"test:neardup:lag:{next(_prefixes)}", "sharded")
    rng = random.Random(5)
    try:
        fp, sketch = rng.getrandbits(64), _sketch(rng)
        idx._commit(-1, idx._item_args(fp, sketch, "first"))  # committed, not yet written
        assert idx.probe(fp, sketch) is None  # the tables do not have it
        near = _flip(fp, [1, 5, 9])
        got = idx.check_and_add(near, _redraw(sketch, 3, rng), "second")
        assert got is not None and got.doc_id == "first" and got.distance == 3
        assert len(idx) == 0  # "second" was not indexed; "first"'s writes never came
    finally:
        idx.clear()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_commit_ring_is_bounded(redis_url, layout: str) -> None:  # type: ignore[no-untyped-def]
    idx = _new_index(redis_url, f"test:neardup:ring:{next(_prefixes)}", layout)
    rng = random.Random(8)
    try:
        items = [(rng.getrandbits(64), _sketch(rng), f"p{i}") for i in range(RING_SIZE + 300)]
        idx.add_many(items)
        assert idx.redis.llen(idx.keys.recent) == RING_SIZE
        assert int(idx.redis.get(idx.keys.count)) == len(items) == len(idx)
        newest, *_ = idx.redis.lrange(idx.keys.recent, 0, 0)
        assert newest.startswith(items[-1][0].to_bytes(8, "big"))
    finally:
        idx.clear()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_bucket_cap_engages_on_templated_fingerprints(redis_url, layout: str) -> None:  # type: ignore[no-untyped-def]
    # A templated site: every page shares the template's first 16 bits (so the
    # first table's bucket, whatever its width, is the same for all).
    name = f"test:neardup:cap:{next(_prefixes)}"
    idx = _new_index(redis_url, name, layout, bucket_cap=50)
    try:
        rng = random.Random(3)
        template = 0xBEEF << 48
        fps = [template | rng.getrandbits(48) for _ in range(400)]
        sketches = [_sketch(rng) for _ in fps]
        idx.add_many(
            [(fp, sk, f"p{i}") for i, (fp, sk) in enumerate(zip(fps, sketches, strict=True))]
        )
        assert idx.bucket_overflows == 400 - 50
        value = idx.blocks[0].value(template)
        bucket = idx.redis.hget(idx.keys.table(0, value), idx.blocks[0].field(template))
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


def test_a_sharded_crawl_resumes_an_index_kept_under_its_tag(redis_url) -> None:  # type: ignore[no-untyped-def]
    # A sharded crawl spreads its index over its page shards, unless the index already
    # has pages under the crawl's tag (created before it spread): resumed, it stays.
    client = redis.Redis.from_url(redis_url)
    keys = FrontierKeys(f"neardup-resume-{next(_prefixes)}", page_shards=3)
    assert crawl_index_shards(client, keys) == [pages.neardup for pages in keys.pages()]
    sketch = _sketch(random.Random(2))
    before = SimhashIndex(client, keys.neardup, K, BAR)  # every key under the crawl's tag
    try:
        before.add(0x5EED, sketch, "old")
        assert crawl_index_shards(client, keys) == [keys.neardup]
        shards = lambda: crawl_index_shards(client, keys)  # noqa: E731
        resumed = SimhashIndex(client, keys.neardup, K, BAR, shards=shards)
        assert resumed.check_and_add(0x5EED ^ 0b101, sketch, "new") == Match("old", 2, 1.0)
    finally:
        before.clear()
