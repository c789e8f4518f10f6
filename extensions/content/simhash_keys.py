"""Where a SimhashIndex keeps its keys: the commit ring on one slot, the rest spread.

The index is per-page state (a 256-byte sketch, the doc id, five 8-byte bucket
entries and their hash fields' overhead: ~470 B per page in test_cluster_page_state's
crawl), so on a sharded crawl it spreads over the page shards like the re-crawl state
(state/keys.py): a fingerprint's sketch and doc id live in the page shard of
crc32(fingerprint). Each table is split in TABLE_PARTS parts by block value mod
TABLE_PARTS, and the m x TABLE_PARTS parts go to evenly spaced shards (part k of n in
shard floor(k * S / n)), so they fall evenly on the masters (a cluster's masters own
contiguous runs of salted shards): 15 parts over three masters, 5 each. Whole tables
(5 over three masters: 2/2/1) left one master with 23% more of a small crawl's bytes,
where a bucket holds one fingerprint and a hash field's overhead makes the tables half
the index. A probe reads one HMGET per part. The client's CPU per new page's
check_and_add (bench_neardup.py --shards, 200,000 fingerprints): 0.71-0.73 ms
unsharded, 0.98-1.16 ms over 12 shards (the writes after the commit are a second
round trip); with a part per shard (~60 HMGETs per probe) it was 1.6-2.0 ms. No
script reads two of those beside each other.

What must be atomic across workers, "no two confirmed near-duplicates both indexed",
needs one place that sees every add in order: the commit ring, on the crawl's own tag.
It holds only the last RING_SIZE adds (fingerprint, sketch, doc id: ~300 B each, so
~80 KB whatever the crawl's size) and the count of adds, the probe's snapshot.

Unsharded (one Redis, or a crawl whose index was created before it spread: its keys
are under the crawl's tag, and a resumed crawl keeps reading them there), the shard
is the crawl's tag itself and one Lua script does the commit and every write.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from extensions.state.connection import AnyRedis
from extensions.state.keys import FrontierKeys

RING_SIZE = 256  # adds the commit ring keeps: COMMIT_LAG and far more than a probe sees land
TABLE_PARTS = 3  # parts of a table, sharded: even over 3 masters, 3 HMGETs per table


@dataclass(frozen=True)
class IndexKeys:
    """Every Redis key of one index. The only place its key names are built.

    ``prefix``: the crawl-wide part (commit ring, count; ``log``: the append-only log
    of fingerprints an index kept before the ring, read for its length only).
    ``shards``: the prefixes of the parts that spread, each with its own hash tag;
    unsharded, ``(prefix,)``.
    """

    prefix: str
    shards: tuple[str, ...]
    n_tables: int

    @property
    def recent(self) -> str:
        return f"{self.prefix}:recent"

    @property
    def count(self) -> str:
        return f"{self.prefix}:count"

    @property
    def log(self) -> str:
        return f"{self.prefix}:log"

    @property
    def single_slot(self) -> bool:
        """Whether every key shares the ring's slot: then one script does everything."""
        return self.shards == (self.prefix,)

    @property
    def parts(self) -> int:
        """Parts of each table: one unsharded (the keys an index always had)."""
        return 1 if len(self.shards) == 1 else TABLE_PARTS

    def table(self, i: int, value: int = 0) -> str:
        """The part of table i that holds block value ``value``, in its own shard."""
        if self.parts == 1:
            return f"{self.shards[0]}:t{i}"
        return f"{self.shards[self.table_shard(i, value)]}:t{i}.{value % self.parts}"

    def table_shard(self, i: int, value: int) -> int:
        part = i * self.parts + value % self.parts
        return part * len(self.shards) // max(1, self.n_tables * self.parts)

    def tables(self) -> list[str]:
        return [self.table(i, v) for i in range(self.n_tables) for v in range(self.parts)]

    def docs(self, shard: int) -> str:
        return f"{self.shards[shard]}:docs"

    def sketches(self, shard: int) -> str:
        return f"{self.shards[shard]}:sketches"

    def overflows(self, shard: int) -> str:
        return f"{self.shards[shard]}:overflows"

    def fp_shard(self, packed_fp: bytes) -> int:
        """The shard of a fingerprint's sketch and doc id."""
        return 0 if len(self.shards) == 1 else zlib.crc32(packed_fp) % len(self.shards)

    def all(self) -> list[str]:
        own = [self.recent, self.count, self.log, *self.tables()]
        for s in range(len(self.shards)):
            own += [self.docs(s), self.sketches(s), self.overflows(s)]
        return own


def index_keys(key_prefix: str, n_tables: int, shards: Sequence[str] = ()) -> IndexKeys:
    """The keys of an index under ``key_prefix``, spread over ``shards`` if given.

    A prefix without a ``{hash tag}`` is wrapped in one so that the ring's keys (and,
    unsharded, every key a script touches) live in one Redis Cluster slot.
    """
    tag = key_prefix if "{" in key_prefix else f"{{{key_prefix}}}"
    return IndexKeys(tag, tuple(shards) or (tag,), n_tables)


def crawl_index_shards(redis: AnyRedis, keys: FrontierKeys) -> list[str]:
    """Where a crawl's index spreads: its page shards' ``neardup2`` prefixes; the
    crawl's own tag unsharded, or where a sharded crawl's index already has pages
    under that tag (created before the index spread: it is resumed where it is)."""
    if keys.page_shards == 1:
        return [keys.neardup]
    if redis.exists(index_keys(keys.neardup, 0).docs(0)):
        return [keys.neardup]
    return [pages.neardup for pages in keys.pages()]
