"""Frontier shard tags (state/keys.py, ShardedKeys.shard_tag; frontier/sharded.py,
crawl_keys): a new sharded crawl records salted tags beside its shard count, so its
shards split evenly over equal masters; a crawl created before keeps `{<crawl>:s<i>}`,
where its queues are, and resumes."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
import redis
import redis.asyncio as aioredis
from redis.crc import key_slot

from extensions.frontier.sharded import crawl_keys, open_frontier
from extensions.state.keys import SALTED_TAGS, FrontierKeys, ShardedKeys
from tests.project_settings import project_frontier_config
from tests.unit.frontier.test_frontier_sim import VirtualClock, items
from tests.unit.state.test_page_keys import tag_of

CONFIG = project_frontier_config(delay=1.0, lease_ttl=60)
IPS = [f"10.0.1.{n}" for n in range(1, 9)]


def test_a_new_crawl_records_salted_tags_with_its_count(redis_client: redis.Redis) -> None:
    keys = crawl_keys(redis_client, "new", 12)
    assert (keys.count, keys.salted) == (12, True)
    marker = FrontierKeys("new").shard_tags
    assert redis_client.get(marker) == SALTED_TAGS.encode()
    slots = [key_slot(tag_of(keys.shard(i).prefix).encode()) for i in range(12)]
    assert [slot * 12 // 16384 for slot in slots] == list(range(12))
    # Three equal masters (0-5460, 5461-10922, 10923-16383): 4 shards each.
    assert Counter(min(slot // 5461, 2) for slot in slots) == {0: 4, 1: 4, 2: 4}
    assert crawl_keys(redis_client, "new", 0) == keys  # a resumed worker, auto count
    with pytest.raises(ValueError, match="differs from the 12 shard"):
        crawl_keys(redis_client, "new", 4)


def test_a_crawl_created_before_salted_tags_keeps_them(redis_client: redis.Redis) -> None:
    redis_client.set(FrontierKeys("old").shards, 4)  # what its first worker wrote
    keys = crawl_keys(redis_client, "old", 0)
    assert (keys.count, keys.salted) == (4, False)
    assert [keys.shard(i).prefix for i in range(4)] == [f"crawlproj:{{old:s{i}}}" for i in range(4)]
    assert redis_client.get(FrontierKeys("old").shard_tags) is None  # never marked later
    assert keys.legacy_page_state  # its per-page hashes may be under its own tag


def test_one_shard_is_the_crawls_own_tag_either_way(redis_client: redis.Redis) -> None:
    keys = crawl_keys(redis_client, "one", 1)
    assert keys.shard(0).prefix == "crawlproj:{one}" == ShardedKeys("one", 1, False).shard(0).prefix
    assert not keys.legacy_page_state


def test_a_resumed_old_crawl_finds_its_queues(redis_url: str, redis_client: redis.Redis) -> None:
    redis_client.set(FrontierKeys("old").shards, 4)
    before = ShardedKeys("old", 4, salted=False)  # the keys its workers used

    async def go() -> tuple[int, int]:
        client, clock = aioredis.Redis.from_url(redis_url), VirtualClock()
        try:
            old_worker = open_frontier(client, before, CONFIG, clock=clock)
            await old_worker.admit(items(IPS, 2))
            resumed = open_frontier(client, crawl_keys(redis_client, "old", 0), CONFIG, clock=clock)
            salted = open_frontier(client, ShardedKeys("old", 4), CONFIG, clock=clock)
            wrong = len((await salted.lease(20)).leases)  # salted tags: nothing there
            return len((await resumed.lease(20)).leases), wrong
        finally:
            await client.aclose()

    found, wrong = asyncio.run(go())
    assert (found, wrong) == (len(IPS), 0)  # one lease per IP (politeness), none lost
