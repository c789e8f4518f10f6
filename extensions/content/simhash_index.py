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

Redis layout (all keys share one hash tag, so one Redis Cluster slot):
  table i   HASH  block value (2 bytes) -> packed 8-byte big-endian fingerprints
  docs      HASH  fingerprint (8 bytes) -> doc_id of the first page indexed with it
  sketches  HASH  fingerprint (8 bytes) -> that page's sketch (SKETCH_BYTES)
  log       STRING every added fingerprint appended, in order (length/8 = count)
  overflows STRING counter of fingerprints a full bucket refused

check_and_add is optimistic instead of one big Lua probe: with 381 look-ups
and up to 1000 fingerprints per bucket, probing in Lua would block Redis for
milliseconds per page. The probe runs client-side (numpy does the popcounts)
after reading the log length S, the nearest max_candidates candidates' sketches
are read and compared; then ONE Lua script (lua/add.lua) atomically compares
the fingerprint against the log entries added since S (normally none or a
handful), verifying each one within k by its sketch, and adds it only if none
is confirmed. Entries before S are complete adds (scripts are atomic) that the
probe saw; entries after S are checked by the script: no two confirmed
near-duplicates are ever admitted.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from extensions.content.fingerprint import SKETCH_SIZE, hamming, resemblance
from extensions.state.lua import assemble

DEFAULT_BLOCKS = 5  # 13-bit blocks: the fewest Redis look-ups x bytes at k=13 (docstring)
MAX_CANDIDATES = 64  # nearest candidates whose sketches a probe reads and compares
MAX_LOOKUPS = 20_000  # refuse configurations whose probes would be absurd
ADD_MANY_BATCH = 500  # items per Lua call in add_many: keeps each call ~ms


@dataclass(frozen=True)
class IndexKeys:
    tables: tuple[str, ...]
    docs: str
    sketches: str
    log: str
    overflows: str

    def all(self) -> list[str]:
        return [*self.tables, self.docs, self.sketches, self.log, self.overflows]


def index_keys(key_prefix: str, n_tables: int) -> IndexKeys:
    """Every Redis key of one index. The only place key names are built.

    A prefix without a ``{hash tag}`` is wrapped in one so that the Lua script's
    keys always live in one Redis Cluster slot.
    """
    tag = key_prefix if "{" in key_prefix else f"{{{key_prefix}}}"
    return IndexKeys(
        tables=tuple(f"{tag}:t{i}" for i in range(n_tables)),
        docs=f"{tag}:docs",
        sketches=f"{tag}:sketches",
        log=f"{tag}:log",
        overflows=f"{tag}:overflows",
    )


@dataclass(frozen=True)
class Block:
    shift: int  # value = (fp >> shift) & mask
    width: int
    radius: int  # look up every block value within this many bits
    masks: tuple[int, ...]  # xor masks of popcount <= radius

    @property
    def field_bytes(self) -> int:
        return (self.width + 7) // 8

    def field(self, fp: int) -> bytes:
        return ((fp >> self.shift) & ((1 << self.width) - 1)).to_bytes(self.field_bytes, "big")

    def probe_fields(self, fp: int) -> list[bytes]:
        value = (fp >> self.shift) & ((1 << self.width) - 1)
        n = self.field_bytes
        return [(value ^ mask).to_bytes(n, "big") for mask in self.masks]


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
    ) -> None:
        kwargs: dict[str, Any] = getattr(redis_client, "get_connection_kwargs", dict)()
        if kwargs.get("decode_responses"):
            raise ValueError("SimhashIndex stores binary values: use decode_responses=False")
        self.redis = redis_client
        self.max_distance = max_distance
        self.min_resemblance = min_resemblance
        self.bucket_cap = bucket_cap
        self.max_candidates = max_candidates
        self.blocks = plan_blocks(max_distance, blocks or DEFAULT_BLOCKS)
        self.keys = index_keys(key_prefix, len(self.blocks))
        self._add_script = redis_client.register_script(_lua_source("add.lua"))
        # Slots that must agree for a match (the Lua side compares counts).
        self._min_equal = math.ceil(min_resemblance * SKETCH_SIZE - 1e-9)

    # ------------------------------------------------------------------ probe

    def _queue_probe(self, pipe: Any, fp: int) -> None:
        for block, table in zip(self.blocks, self.keys.tables, strict=True):
            pipe.hmget(table, block.probe_fields(fp))

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

    def probe_all(self, fp: int) -> list[tuple[int, str, int]]:
        """Every indexed (fingerprint, doc_id, distance) within max_distance, nearest
        first: the candidates, before any sketch is compared."""
        pipe = self.redis.pipeline(transaction=False)
        self._queue_probe(pipe, fp)
        near, dist = self._near(fp, pipe.execute())
        if not len(near):
            return []
        fps = [int(f) for f in near]
        ids = self.redis.hmget(self.keys.docs, [_pack(f) for f in fps])
        return [
            (f, doc.decode(), int(d))
            for f, doc, d in zip(fps, ids, dist, strict=True)
            if doc is not None
        ]

    def _verify(self, near: np.ndarray, dist: np.ndarray, sketch: bytes) -> Match | None:
        """The candidate (of the nearest max_candidates) whose sketch resembles
        ``sketch`` most, if it reaches min_resemblance."""
        fields = [_pack(int(f)) for f in near[: self.max_candidates]]
        if not fields:
            return None
        pipe = self.redis.pipeline(transaction=False)
        pipe.hmget(self.keys.sketches, fields)
        pipe.hmget(self.keys.docs, fields)
        sketches, ids = pipe.execute()
        best: Match | None = None
        for stored, doc, d in zip(sketches, ids, dist, strict=False):
            if stored is None or doc is None:
                continue
            r = resemblance(sketch, stored)
            if r >= self.min_resemblance and (best is None or r > best.resemblance):
                best = Match(doc.decode(), int(d), r)
        return best

    def probe(self, fp: int, sketch: bytes) -> Match | None:
        """The best confirmed near duplicate of (fp, sketch) indexed, or None."""
        pipe = self.redis.pipeline(transaction=False)
        self._queue_probe(pipe, fp)
        near, dist = self._near(fp, pipe.execute())
        return self._verify(near, dist, sketch)

    # -------------------------------------------------------------------- add

    def _item_args(self, fp: int, sketch: bytes, doc_id: str) -> list[bytes | str]:
        return [_pack(fp), doc_id, sketch, *(block.field(fp) for block in self.blocks)]

    def _head(self, since: int) -> list[int]:
        return [len(self.blocks), self.max_distance, self._min_equal, self.bucket_cap, since]

    def add(self, fp: int, sketch: bytes, doc_id: str) -> None:
        """Index fp unconditionally (an identical fingerprint keeps its first doc_id)."""
        self._add_script(
            keys=self.keys.all(), args=[*self._head(-1), *self._item_args(fp, sketch, doc_id)]
        )

    def add_many(self, items: list[tuple[int, bytes, str]]) -> None:
        """Bulk add of (fp, sketch, doc_id): pipelined Lua calls of ADD_MANY_BATCH items."""
        pipe = self.redis.pipeline(transaction=False)
        for start in range(0, len(items), ADD_MANY_BATCH):
            args: list[bytes | str] = []
            for fp, sketch, doc_id in items[start : start + ADD_MANY_BATCH]:
                args.extend(self._item_args(fp, sketch, doc_id))
            self._add_script(keys=self.keys.all(), args=[*self._head(-1), *args], client=pipe)
        pipe.execute()

    def check_and_add(self, fp: int, sketch: bytes, doc_id: str) -> Match | None:
        """The confirmed near duplicate of (fp, sketch) already indexed, or None
        after adding it.

        Atomic across processes: of two confirmed near-duplicates racing, one is
        added and the other gets its Match (see the module docstring).
        """
        pipe = self.redis.pipeline(transaction=False)
        pipe.strlen(self.keys.log)
        self._queue_probe(pipe, fp)
        since, *replies = pipe.execute()
        near, dist = self._near(fp, replies)
        found = self._verify(near, dist, sketch)
        if found is not None:
            return found
        args = [*self._head(since // 8), *self._item_args(fp, sketch, doc_id)]
        blocker = self._add_script(keys=self.keys.all(), args=args)
        if not blocker:
            return None
        pipe = self.redis.pipeline(transaction=False)
        pipe.hget(self.keys.docs, blocker)
        pipe.hget(self.keys.sketches, blocker)
        doc, stored = pipe.execute()
        r = resemblance(sketch, stored) if stored else self.min_resemblance
        return Match(doc.decode() if doc else "", hamming(fp, int.from_bytes(blocker, "big")), r)

    # ------------------------------------------------------------------ admin

    @property
    def bucket_overflows(self) -> int:
        """How many (fingerprint, table) insertions a full bucket refused."""
        return int(self.redis.get(self.keys.overflows) or 0)

    def __len__(self) -> int:
        return int(self.redis.strlen(self.keys.log)) // 8

    def clear(self) -> None:
        """Delete every key of this index."""
        self.redis.delete(*self.keys.all())
