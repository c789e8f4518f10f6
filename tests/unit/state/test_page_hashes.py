"""Per-page hashes (state/page_hashes.py): content hashes, page templates and WARC
originals in the page shard of their field on a sharded crawl, the crawl's own tag
unsharded, and a sharded crawl created before still read under its own tag."""

from __future__ import annotations

from collections import Counter

import redis

from extensions.state.keys import SALTED_TAGS, FrontierKeys, PageKeys
from extensions.state.page_hashes import PageHash

FIELDS = [f"{n:064x}" for n in range(600)]


def hashes(client: redis.Redis, crawl: str) -> PageHash:
    return PageHash(client, crawl, lambda pages: pages.content_hashes)


def created(client: redis.Redis, crawl: str, shards: int, salted: bool) -> None:
    keys = FrontierKeys(crawl)
    client.set(keys.shards, shards)
    if salted:
        client.set(keys.shard_tags, SALTED_TAGS)


def test_unsharded_fields_stay_in_the_crawls_hash(redis_client: redis.Redis) -> None:
    created(redis_client, "one", 1, salted=True)
    store = hashes(redis_client, "one")
    assert {store.key(f) for f in FIELDS} == {"crawlproj:{one}:content_hashes"}
    assert store.first_writer(FIELDS[0], "http://a.test/") == "http://a.test/"
    assert store.get(FIELDS[0]) == "http://a.test/" and store.get(FIELDS[1]) is None


def test_a_sharded_crawls_fields_spread_over_its_page_shards(redis_client: redis.Redis) -> None:
    created(redis_client, "new", 12, salted=True)
    worker_a, worker_b = hashes(redis_client, "new"), hashes(redis_client, "new")
    for n, field in enumerate(FIELDS):
        assert worker_a.first_writer(field, f"http://a.test/{n}") == f"http://a.test/{n}"
        assert worker_b.first_writer(field, f"http://b.test/{n}") == f"http://a.test/{n}"
    per_key = Counter(worker_a.key(f) for f in FIELDS)
    assert set(per_key) == {PageKeys("new", i, 12).content_hashes for i in range(12)}
    assert max(per_key.values()) < 1.6 * min(per_key.values())  # 50 per shard, +- noise
    # Created with this layout: the crawl's own tag holds nothing, and is not read.
    legacy = FrontierKeys("new").legacy_pages.content_hashes
    redis_client.hset(legacy, "f" * 64, "http://old.test/")
    assert worker_a.get("f" * 64) is None


def test_an_old_sharded_crawls_fields_are_read_under_its_tag(redis_client: redis.Redis) -> None:
    created(redis_client, "old", 4, salted=False)  # G:shards without the marker
    legacy = FrontierKeys("old").legacy_pages.content_hashes
    redis_client.hset(legacy, mapping={FIELDS[0]: "http://first.test/", FIELDS[1]: "http://x/"})
    store = hashes(redis_client, "old")
    assert store.get(FIELDS[1]) == "http://x/"  # a miss in the shard: the old place
    # First writer wins: the old crawl's page, copied into the field's page shard.
    assert store.first_writer(FIELDS[0], "http://later.test/") == "http://first.test/"
    assert redis_client.hget(store.key(FIELDS[0]), FIELDS[0]) == b"http://first.test/"
    assert store.first_writer(FIELDS[2], "http://new.test/") == "http://new.test/"
    store.set(FIELDS[3], "v")
    assert redis_client.hget(legacy, FIELDS[3]) is None  # the old place is never written
    assert store.get(FIELDS[3]) == "v"
