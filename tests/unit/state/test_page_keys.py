"""Where per-page and per-host state lives (state/keys.py, page shards): unchanged on an
unsharded crawl, spread evenly over the slot space on a sharded one."""

from __future__ import annotations

import zlib
from collections import Counter

import pytest
from redis.crc import key_slot

from extensions.state.keys import ShardedKeys
from extensions.state.tags import origin_host


def tag_of(key: str) -> str:
    return key[key.index("{") + 1 : key.index("}")]


def test_unsharded_keys_are_the_crawl_tag_as_before() -> None:
    keys = ShardedKeys("web", 1).crawl_keys
    assert keys.pages() == [keys.legacy_pages]
    assert keys.page_of("0123456789abcdef").doc("0123456789abcdef") == (
        "crawlproj:{web}:doc:0123456789abcdef"
    )
    assert keys.legacy_pages.recrawl_due == "crawlproj:{web}:recrawl_due"
    assert keys.dns("a.test") == "crawlproj:{web}:dns:a.test"
    assert keys.robots("http://a.test:8080") == "crawlproj:{web}:robots:http://a.test:8080"


@pytest.mark.parametrize("count", [2, 3, 12, 48])
def test_page_shards_split_the_slot_space_evenly(count: int) -> None:
    pages = ShardedKeys("web", count).crawl_keys.pages()
    slots = [key_slot(tag_of(p.doc("x")).encode()) for p in pages]
    # Shard i's slot lies in the i-th count-th of the slots...
    assert [s * count // 16384 for s in slots] == list(range(count))
    # ... so three equal masters (0-5460, 5461-10922, 10923-16383) get equal shares.
    per_master = Counter(min(s // 5461, 2) for s in slots)
    if count % 3 == 0:
        assert set(per_master.values()) == {count // 3}


def test_a_page_and_its_recrawl_keys_share_one_slot() -> None:
    keys = ShardedKeys("web", 12).crawl_keys
    fp = "00ff00ff00ff00ff"
    place = keys.page_of(fp)
    assert place == keys.pages()[zlib.crc32(fp.encode()) % 12]
    same = {key_slot(k.encode()) for k in (place.doc(fp), place.recrawl_due, place.recrawl_claims)}
    assert len(same) == 1 and place.recrawl_rates.startswith(place.prefix)
    assert place.prefix != keys.legacy_pages.prefix  # the old place is only read, not written


def test_fingerprints_spread_over_the_page_shards() -> None:
    keys = ShardedKeys("web", 12).crawl_keys
    counts = Counter(keys.page_of(f"{i:016x}") for i in range(12_000))
    assert len(counts) == 12 and max(counts.values()) < 1.15 * min(counts.values())


def test_an_origin_and_the_glob_of_its_host_name_one_shard() -> None:
    keys = ShardedKeys("web", 12).crawl_keys
    shard = keys.page_of("a.test").prefix
    for origin in ("http://a.test", "https://a.test:8443", "*://a.test*"):
        assert keys.robots(origin).startswith(shard + ":robots:")
    assert keys.dns("a.test") == f"{shard}:dns:a.test"
    assert origin_host("http://[::1]:8080") == "[::1]"
    assert origin_host("https://b.test:443") == "b.test"


def test_a_crawl_created_before_salted_tags_keeps_its_frontier_shard_keys() -> None:
    shard = ShardedKeys("web", 12, salted=False).shard(3)
    assert shard.prefix == "crawlproj:{web:s3}" and shard.crawl_prefix == "crawlproj:{web}"
    assert ShardedKeys("web", 1).shard(0).prefix == "crawlproj:{web}"  # either scheme


def test_per_page_hashes_keep_their_unsharded_keys() -> None:
    pages = ShardedKeys("web", 1).crawl_keys.page_of("0123")
    assert pages.content_hashes == "crawlproj:{web}:content_hashes"
    assert pages.page_templates == "crawlproj:{web}:page_templates"
    assert pages.warc_records == "crawlproj:{web}:warc_records"
