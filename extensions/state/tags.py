"""The hash tags of state/keys.py's shards, and the host an origin's keys are placed by.

A salted tag exists because Redis Cluster places a slot, not a name: `{web:s0}` ..
`{web:s11}` land where their CRC16 falls, 3/4/5 over three masters. Trying salts until
shard i's slot falls in the i-th N-th of the slot space gives equal masters equal
shares (masters own contiguous, equal ranges after `redis-cli --cluster create`).
"""

from __future__ import annotations

from functools import cache

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot


@cache
def salted_tag(crawl: str, kind: str, index: int, count: int) -> str:
    """Hash tag `{<crawl>:<kind><index>~<salt>}` of shard `index` of `count` (kind "s":
    frontier, "p": page): the first salt whose slot falls in the index-th count-th of the
    slots, so the shards split evenly over equal slot ranges (about `count` CRC16s per
    shard, once per process)."""
    for salt in range(100 * REDIS_CLUSTER_HASH_SLOTS):
        tag = f"{crawl}:{kind}{index}~{salt}"
        if key_slot(tag.encode()) * count // REDIS_CLUSTER_HASH_SLOTS == index:
            return tag
    raise AssertionError(f"no salt puts shard {kind}{index} of {count} in its slot range")


def origin_host(origin: str) -> str:
    """ "http://a.test:8080" -> "a.test"; "*://a.test*" (a glob of its origins) too."""
    rest = origin.partition("://")[2]
    if rest.startswith("[") and "]" in rest:  # an IPv6 literal holds colons
        return rest[: rest.index("]") + 1]
    return rest.split(":", 1)[0].split("/", 1)[0].rstrip("*")
