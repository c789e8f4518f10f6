"""URL-seen's Bloom filter on a real three-master Redis Cluster: one filter per frontier
shard, on the master of the shard's slot, and the filters spread over every master."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from extensions.frontier.sharded import ShardedFrontier, crawl_keys
from extensions.state.connection import as_str, connect_url, map_slots
from tests.integration.redis_cluster import LocalCluster
from tests.unit.frontier.test_bloom import CRAWL, IPS, admit_all, config, urls
from tests.unit.frontier.test_frontier_sim import VirtualClock


def test_one_filter_per_shard_on_its_master(cluster: LocalCluster) -> None:
    sync = connect_url(cluster.url)
    keys = crawl_keys(sync, CRAWL, 0)
    sync.close()
    pages = urls("cluster", 4000)

    async def go() -> tuple[list[int], list[int]]:
        client = AsyncRedisCluster.from_url(cluster.url)
        await map_slots(client)
        frontier = ShardedFrontier(client, keys, config(capacity=1000), VirtualClock())
        try:
            return await admit_all(frontier, pages), await admit_all(frontier, pages)
        finally:
            await client.aclose()

    first, again = asyncio.run(go())
    assert first[0] >= len(pages) - 2  # a false positive may refuse a new URL, ~7e-5
    assert again == [0, len(pages)]
    masters_of: dict[str, set[int]] = defaultdict(set)
    for number, node in enumerate(cluster.nodes()):
        for key in node.keys("*:bloom:*") + node.keys("*:seen_bloom"):
            masters_of[as_str(key).split("}")[0] + "}"].add(number)
    tags = {keys.for_ip(ip).prefix for ip in IPS}  # every shard that was given a URL
    assert len(tags) > len(cluster.nodes())
    assert set(masters_of) == tags
    assert all(len(masters) == 1 for masters in masters_of.values())  # filter and meta together
    assert set().union(*masters_of.values()) == set(range(len(cluster.nodes())))
