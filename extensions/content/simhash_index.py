"""Shared simhash index in Redis: every worker sees every fingerprint.

The index only proposes: a candidate within max_distance bits becomes a near
duplicate when its stored sketch confirms it (estimated 5-shingle resemblance
>= min_resemblance, see fingerprint.py); the simhash alone never drops a page.

Why not the classic "k+1 blocks, exact match" pigeonhole? The corpora pick a
threshold of 13 bits (see fingerprint.py). Exact-block schemes need
blocks narrower than 64/(k+1) = 8 bits, i.e. 1M fingerprints / 256 = 4k
candidates per bucket, or Manku's permutations with C(b, k) tables (b=10 ->
120 tables, 120 copies of every fingerprint). Instead this is the generalised
pigeonhole of multi-index hashing: split the 64 bits into m blocks (default 5:
13,13,13,13,12 bits) with per-block radii t_i such that sum(t_i + 1) > k. If
two fingerprints differ in <= k bits, some block i differs in <= t_i bits, so
a probe looks up, in table i, every block value within t_i bits of its own.
For k=13, m=5: t = (2,2,2,2,1), 4 x 92 + 13 = 381 bucket look-ups per probe,
~120 fingerprints per bucket at 1M entries (~47k candidates, whose popcounts
numpy does in ~0.2 ms); each fingerprint is stored m=5 times (8 bytes each,
packed). Measured at 1M fingerprints (bench_neardup.py): Redis spends 0.43 ms
per probe with m=5, 1.9 ms with m=4 (t = (3,3,2,2): 1,668 look-ups of sparser
buckets): look-ups cost more than the bytes they copy. m=7 (71 look-ups) is
cheaper still but its 9-bit buckets pass the 1000-entry cap at ~500k pages.
Small k degenerates to the exact-block scheme (k=3, m=4: t = 0, 4 look-ups).

Redis layout (simhash_keys.py: where each key lives, sharded or not):
  table i   HASH  block value (2 bytes) -> packed 8-byte big-endian fingerprints
  docs      HASH  fingerprint (8 bytes) -> doc_id of the first page indexed with it
  sketches  HASH  fingerprint (8 bytes) -> that page's sketch (SKETCH_BYTES)
  overflows STRING counter of fingerprints a full bucket refused
  recent    LIST  the commit ring: the last RING_SIZE adds, fp .. sketch .. doc_id
  count     STRING adds committed so far (the probe's snapshot)

check_and_add is optimistic instead of one big Lua probe: with 381 look-ups
and up to 1000 fingerprints per bucket, probing in Lua would block Redis for
milliseconds per page. The probe runs client-side (numpy does the popcounts)
after reading the count S; the nearest max_candidates candidates' sketches
are read and compared; then ONE Lua script (lua/add.lua) atomically compares
the fingerprint against the ring's adds numbered S or later (normally none or
a handful), verifying each one within k by the sketch the ring carries, and
commits it only if none is confirmed: no two confirmed near-duplicates are
both indexed. Unsharded the same script writes the tables. Sharded, the
tables are written after the commit, in other slots, so a probe can read a
table before a committed add reaches it: the commit then checks the adds from
S - COMMIT_LAG on, which covers the adds in flight while a probe runs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import numpy as np

from extensions.content.fingerprint import SKETCH_SIZE, hamming, resemblance
from extensions.content.simhash_keys import RING_SIZE, IndexKeys, index_keys
from extensions.state.lua import assemble

DEFAULT_BLOCKS = 5  # 13-bit blocks: the fewest Redis look-ups x bytes at k=13 (docstring)
MAX_CANDIDATES = 64  # nearest candidates whose sketches a probe reads and compares
MAX_LOOKUPS = 20_000  # refuse configurations whose probes would be absurd
ADD_MANY_BATCH = 500  # items per Lua call in add_many: keeps each call ~ms
# Adds a sharded commit checks before its probe's snapshot: those whose table writes
# may not have landed when the probe read the tables (one round trip each, so a
# handful at most; checking one costs the script ~1 us).
COMMIT_LAG = 64


@dataclass(frozen=True)
class Block:
    shift: int  # value = (fp >> shift) & mask
    width: int
    radius: int  # look up every block value within this many bits
    masks: tuple[int, ...]  # xor masks of popcount <= radius

    @property
    def field_bytes(self) -> int:
        return (self.width + 7) // 8

    def value(self, fp: int) -> int:
        return (fp >> self.shift) & ((1 << self.width) - 1)

    def field(self, fp: int) -> bytes:
        return self.value(fp).to_bytes(self.field_bytes, "big")

    def probe_values(self, fp: int) -> list[int]:
        """Every block value within this block's radius of fp's."""
        value = self.value(fp)
        return [value ^ mask for mask in self.masks]


@cache
def plan_blocks(max_distance: int, blocks: int) -> tuple[Block, ...]:
    """Split 64 bits into ``blocks`` blocks and give each a search radius.

    Radii sum to max_distance - blocks + 1 (pigeonhole), spread evenly since
    the number of look-ups grows combinatorially with a single radius.
    """
    if not 1 <= blocks <= 64 or max_distance < 0:
        raise ValueError(f"bad index shape: max_distance={max_distance} blocks={blocks}")
    widths = [64 // blocks + (1 if i < 64 % blocks else 0) for i in range(blocks)]
    need = max(0, max_distance - blocks + 1)
    radii = [need // blocks + (1 if i < need % blocks else 0) for i in range(blocks)]
    # Counted before the masks are built: one block at distance 13 would be
    # C(64, <=13) ~ 5e12 masks, a start-up that never ends instead of an error.
    lookups = sum(
        math.comb(w, r) for w, t in zip(widths, radii, strict=True) for r in range(min(t, w) + 1)
    )
    if lookups > MAX_LOOKUPS:
        raise ValueError(
            f"{blocks} blocks for max_distance={max_distance}: {lookups} look-ups per probe "
            f"(at most {MAX_LOOKUPS}); use more blocks"
        )
    out, shift = [], 64
    for width, radius in zip(widths, radii, strict=True):
        shift -= width
        masks = tuple(
            sum(1 << b for b in bits)
            for r in range(min(radius, width) + 1)
            for bits in itertools.combinations(range(width), r)
        )
        out.append(Block(shift, width, radius, masks))
    return tuple(out)


PACKAGE = "extensions.content"


@cache
def _lua_source(name: str) -> str:
    return assemble(PACKAGE, name.removesuffix(".lua"))  # add.lua includes hamming.lua


def _pack(fp: int) -> bytes:
    return fp.to_bytes(8, "big")


@dataclass(frozen=True)
class Match:
    """An indexed page confirmed as a near duplicate of the probe."""

    doc_id: str
    distance: int  # simhash bits
    resemblance: float  # estimated 5-shingle resemblance from the sketches


class SimhashIndex:
    """Near-duplicate lookup of 64-bit fingerprints, verified by sketches, in Redis.

    ``redis_client`` must return bytes (``decode_responses=False``).
    ``min_resemblance``: the sketch estimate a candidate needs to be a match.
    ``bucket_cap``: a bucket (one table, one block value) that holds that many
    fingerprints takes no more: templated sites pile pages onto a few block
    values, and a probe reads whole buckets, so the cap bounds a probe to
    look-ups x cap candidates. A refused insertion is counted in
    ``bucket_overflows``; the fingerprint stays findable through its other
    tables (it is lost only where all m of its buckets are full). New entries
    are refused rather than old ones evicted: no rewrite of a full bucket per
    add, and the bucket keeps the template's earliest pages.
    ``shards``: where the index spreads (simhash_keys.py), or a callable giving
    them on first use (a crawl's page shards are known once its frontier opened);
    none: every key under ``key_prefix``.
    """

    def __init__(
        self,
        redis_client: Any,
        key_prefix: str,
        max_distance: int,
        min_resemblance: float,
        blocks: int | None = None,
        bucket_cap: int = 1000,
        max_candidates: int = MAX_CANDIDATES,
        shards: Sequence[str] | Callable[[], Sequence[str]] = (),
    ) -> None:
        kwargs: dict[str, Any] = getattr(redis_client, "get_connection_kwargs", dict)()
        if kwargs.get("decode_responses"):
            raise ValueError("SimhashIndex stores binary values: use decode_responses=False")
        self.redis = redis_client
        self.key_prefix = key_prefix
        self.max_distance = max_distance
        self.min_resemblance = min_resemblance
        self.bucket_cap = bucket_cap
        self.max_candidates = max_candidates
        self.blocks = plan_blocks(max_distance, blocks or DEFAULT_BLOCKS)
        self._shards = shards
        self._add_script = redis_client.register_script(_lua_source("add.lua"))
        # Slots that must agree for a match (the Lua side compares counts).
        self._min_equal = math.ceil(min_resemblance * SKETCH_SIZE - 1e-9)

    @cached_property
    def keys(self) -> IndexKeys:
        shards = self._shards() if callable(self._shards) else self._shards
        return index_keys(self.key_prefix, len(self.blocks), shards)

    # ------------------------------------------------------------------ probe

    def _queue_probe(self, pipe: Any, fp: int) -> None:
        keys = self.keys
        for i, block in enumerate(self.blocks):
            n = block.field_bytes
            values = block.probe_values(fp)
            if keys.parts == 1:
                pipe.hmget(keys.table(i), [v.to_bytes(n, "big") for v in values])
                continue
            for part in range(keys.parts):
                fields = [v.to_bytes(n, "big") for v in values if v % keys.parts == part]
                if fields:
                    pipe.hmget(keys.table(i, part), fields)

    def _near(self, fp: int, replies: list[list[bytes | None]]) -> tuple[np.ndarray, np.ndarray]:
        """Distinct candidates within max_distance, nearest first, and their distances."""
        packed = b"".join(v for reply in replies for v in reply if v)
        if not packed:
            return np.empty(0, np.uint64), np.empty(0, np.uint8)
        # Filter first, then sort the few that are near: tens of thousands of
        # candidates at 1M fingerprints, a handful within max_distance.
        candidates = np.frombuffer(packed, dtype=">u8").astype(np.uint64)
        dist = np.bitwise_count(candidates ^ np.uint64(fp))
        keep = dist <= self.max_distance
        near, idx = np.unique(candidates[keep], return_index=True)
        dist = dist[keep][idx]
        order = np.lexsort((near, dist))
        return near[order], dist[order]

    def _probe(self, fp: int) -> tuple[np.ndarray, np.ndarray]:
        pipe = self.redis.pipeline(transaction=False)
        self._queue_probe(pipe, fp)
        return self._near(fp, pipe.execute())

    def _docs(self, packed: list[bytes], sketches: bool) -> list[tuple[bytes | None, ...]]:
        """Per fingerprint (packed): (doc_id,) or (doc_id, sketch), None where missing."""
        keys = self.keys
        pipe = self.redis.pipeline(transaction=False)
        by_shard: dict[int, list[bytes]] = {}
        for fp in packed:
            by_shard.setdefault(keys.fp_shard(fp), []).append(fp)
        for shard, fps in by_shard.items():
            pipe.hmget(keys.docs(shard), fps)
            if sketches:
                pipe.hmget(keys.sketches(shard), fps)
        replies = iter(pipe.execute())
        found: dict[bytes, tuple[bytes | None, ...]] = {}
        for fps in by_shard.values():
            columns = [next(replies) for _ in range(1 + sketches)]
            found.update(zip(fps, zip(*columns, strict=True), strict=True))
        return [found[fp] for fp in packed]

    def probe_all(self, fp: int) -> list[tuple[int, str, int]]:
        """Every indexed (fingerprint, doc_id, distance) within max_distance, nearest
        first: the candidates, before any sketch is compared."""
        near, dist = self._probe(fp)
        fps = [int(f) for f in near]
        ids = self._docs([_pack(f) for f in fps], sketches=False)
        return [
            (f, doc.decode(), int(d))
            for f, (doc,), d in zip(fps, ids, dist, strict=True)
            if doc is not None
        ]

    def _verify(self, near: np.ndarray, dist: np.ndarray, sketch: bytes) -> Match | None:
        """The candidate (of the nearest max_candidates) whose sketch resembles
        ``sketch`` most, if it reaches min_resemblance."""
        fields = [_pack(int(f)) for f in near[: self.max_candidates]]
        if not fields:
            return None
        best: Match | None = None
        for (doc, stored), d in zip(self._docs(fields, sketches=True), dist, strict=False):
            if stored is None or doc is None:
                continue
            r = resemblance(sketch, stored)
            if r >= self.min_resemblance and (best is None or r > best.resemblance):
                best = Match(doc.decode(), int(d), r)
        return best

    def probe(self, fp: int, sketch: bytes) -> Match | None:
        """The best confirmed near duplicate of (fp, sketch) indexed, or None."""
        near, dist = self._probe(fp)
        return self._verify(near, dist, sketch)

    # -------------------------------------------------------------------- add

    def _item_args(self, fp: int, sketch: bytes, doc_id: str) -> list[bytes | str]:
        return [_pack(fp), doc_id, sketch, *(block.field(fp) for block in self.blocks)]

    def _commit(self, since: int, args: list[bytes | str], client: Any = None) -> Any:
        """add.lua: the commit on the ring's slot, with every write when unsharded."""
        keys = self.keys
        script_keys = [keys.recent, keys.count]
        if keys.single_slot:
            script_keys += [keys.docs(0), keys.sketches(0), keys.overflows(0)]
            script_keys += [keys.table(i) for i in range(len(self.blocks))]
        lag = 0 if keys.single_slot or since < 0 else COMMIT_LAG
        head = [len(self.blocks), self.max_distance, self._min_equal, self.bucket_cap]
        return self._add_script(
            keys=script_keys, args=[*head, since, lag, RING_SIZE, *args], client=client
        )

    def _write_spread(self, items: list[tuple[int, bytes, str]]) -> None:
        """The writes of committed adds to a sharded index, one pipeline (each bucket
        append is a small script on the bucket's own slot: a raw EVAL, which a
        cluster pipeline routes by its keys where it refuses eval() and evalsha()).
        An identical fingerprint's bucket entries are appended again: rare (its
        sketch differed), and a probe's candidates are deduplicated."""
        keys, append = self.keys, _lua_source("append.lua")
        pipe = self.redis.pipeline(transaction=False)
        for fp, sketch, doc_id in items:
            packed = _pack(fp)
            shard = keys.fp_shard(packed)
            pipe.hsetnx(keys.docs(shard), packed, doc_id)
            pipe.hsetnx(keys.sketches(shard), packed, sketch)
            for i, block in enumerate(self.blocks):
                value = block.value(fp)
                table, overflows = keys.table(i, value), keys.overflows(keys.table_shard(i, value))
                args = (table, overflows, block.field(fp), packed, self.bucket_cap)
                pipe.execute_command("EVAL", append, 2, *args)
        pipe.execute()

    def add(self, fp: int, sketch: bytes, doc_id: str) -> None:
        """Index fp unconditionally (an identical fingerprint keeps its first doc_id)."""
        self.add_many([(fp, sketch, doc_id)])

    def add_many(self, items: list[tuple[int, bytes, str]]) -> None:
        """Bulk add of (fp, sketch, doc_id): pipelined Lua calls of ADD_MANY_BATCH items."""
        pipe = self.redis.pipeline(transaction=False)
        for start in range(0, len(items), ADD_MANY_BATCH):
            batch = items[start : start + ADD_MANY_BATCH]
            args = [arg for item in batch for arg in self._item_args(*item)]
            self._commit(-1, args, client=pipe)
        pipe.execute()
        if not self.keys.single_slot:
            self._write_spread(items)

    def check_and_add(self, fp: int, sketch: bytes, doc_id: str) -> Match | None:
        """The confirmed near duplicate of (fp, sketch) already indexed, or None
        after adding it.

        Atomic across processes: of two confirmed near-duplicates racing, one is
        added and the other gets its Match (see the module docstring).
        """
        pipe = self.redis.pipeline(transaction=False)
        self.queue_check(pipe, fp)
        return self.finish_check(fp, sketch, doc_id, pipe.execute())

    def queue_check(self, pipe: Any, fp: int) -> None:
        """check_and_add's reads, queued on a caller's pipeline: one round trip with the
        caller's own reads (a page's content-hash lookup). Their replies, in order, go
        to finish_check."""
        pipe.get(self.keys.count)
        self._queue_probe(pipe, fp)

    def finish_check(self, fp: int, sketch: bytes, doc_id: str, replies: list[Any]) -> Match | None:
        """check_and_add from the replies of queue_check's reads."""
        since, *probed = replies
        near, dist = self._near(fp, probed)
        found = self._verify(near, dist, sketch)
        if found is not None:
            return found
        blocker = self._commit(int(since or 0), self._item_args(fp, sketch, doc_id))
        if not blocker:
            if not self.keys.single_slot:
                self._write_spread([(fp, sketch, doc_id)])
            return None
        other, doc, stored = blocker
        r = resemblance(sketch, stored)
        return Match(doc.decode(), hamming(fp, int.from_bytes(other, "big")), r)

    # ------------------------------------------------------------------ admin

    @property
    def bucket_overflows(self) -> int:
        """How many (fingerprint, table) insertions a full bucket refused."""
        keys = self.keys
        pipe = self.redis.pipeline(transaction=False)
        for shard in range(len(keys.shards)):
            pipe.get(keys.overflows(shard))
        return sum(int(n or 0) for n in pipe.execute())

    def __len__(self) -> int:
        """Fingerprints indexed (an identical one counts once)."""
        keys = self.keys
        pipe = self.redis.pipeline(transaction=False)
        for shard in range(len(keys.shards)):
            pipe.hlen(keys.docs(shard))
        return sum(pipe.execute())

    def clear(self) -> None:
        """Delete every key of this index (one by one: a cluster's keys are in many slots)."""
        pipe = self.redis.pipeline(transaction=False)
        for key in self.keys.all():
            pipe.delete(key)
        pipe.execute()
