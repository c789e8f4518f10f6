"""Re-crawl state of a sharded crawl (G:shards > 1) in a real Redis: each page's state,
due time and claim live in its page shard, the store's verbs visit every shard, and a
crawl whose state predates page shards is still read and moved page by page."""

from __future__ import annotations

import asyncio
from collections import Counter

import redis

from extensions.frontier.admin import FrontierAdmin
from extensions.recrawl.schedule import NEW_BUCKET
from extensions.state.keys import FrontierKeys, ShardedKeys
from tests.unit.recrawl.test_store import INTERVAL, T0, fetch, make_store, record

SHARDS = 4
KEYS = ShardedKeys("rc", SHARDS).crawl_keys
FPS = [f"{i:016x}" for i in range(40)]


def run(coro):
    return asyncio.run(coro)


def docs_per_shard(client: redis.Redis) -> Counter[str]:
    found = Counter[str]()
    for key in client.scan_iter(match="crawlproj:{rc*:doc:*"):
        found[key.decode().split("}")[0] + "}"] += 1
    return found


def test_pages_spread_and_every_verb_sees_every_shard(redis_url, redis_client) -> None:
    redis_client.set(KEYS.shards, SHARDS)

    async def go() -> tuple[int, int, list[str], list[dict[str, int]]]:
        store = make_store(redis_url)
        for fp in FPS:
            await record(store, fetch(fp, T0, None))
        due = await store.due_now(T0 + INTERVAL)
        claim = await store.claim(len(FPS), T0 + INTERVAL)
        histograms: list[dict[str, int]] = []
        store.schedule.update = histograms.append  # type: ignore[method-assign,assignment]
        store._schedule_at = 0.0  # the policy input is read again now
        await store.refresh_schedule(T0)
        await store.close()
        return due, claim.due_left, sorted(row[0] for row in claim.rows), histograms

    due, left, claimed, histograms = run(go())
    assert (due, left, claimed) == (len(FPS), 0, FPS)
    assert histograms == [{NEW_BUCKET: len(FPS)}]  # the sum over the shards
    shards = docs_per_shard(redis_client)
    assert set(shards) == {p.prefix for p in KEYS.pages()}  # all four, none on the old tag
    for fp in FPS:
        assert redis_client.exists(KEYS.page_of(fp).doc(fp))
        assert redis_client.zscore(KEYS.page_of(fp).recrawl_due, fp) == T0 + INTERVAL + 50
    rates = Counter[str]()
    for place in KEYS.pages():
        rates.update(
            {k.decode(): int(v) for k, v in redis_client.hgetall(place.recrawl_rates).items()}
        )
    assert rates == {NEW_BUCKET: len(FPS)}


def test_a_claim_takes_at_most_n_over_all_shards_and_counts_the_rest(
    redis_url, redis_client
) -> None:
    redis_client.set(KEYS.shards, SHARDS)

    async def go() -> list[tuple[int, int]]:
        store = make_store(redis_url)
        for fp in FPS:
            await record(store, fetch(fp, T0, None))
        out = []
        for _ in range(5):
            claim = await store.claim(10, T0 + INTERVAL)
            out.append((len(claim.rows), claim.due_left))
        await store.close()
        return out

    assert run(go()) == [(10, 30), (10, 20), (10, 10), (10, 0), (0, 0)]


def test_hints_and_postpone_reach_the_page_shard(redis_url, redis_client) -> None:
    redis_client.set(KEYS.shards, SHARDS)

    async def go() -> tuple[int, int]:
        store = make_store(redis_url)
        for fp in FPS[:8]:
            await record(store, fetch(fp, T0, None))
        moved = await store.hint_lastmod([(fp, T0 + 5) for fp in FPS[:8]], T0 + 10)
        await store.postpone(FPS[0], T0 + 999)
        due = await store.due_now(T0 + 10)
        await store.close()
        return moved, due

    assert run(go()) == (8, 7)
    assert redis_client.zscore(KEYS.page_of(FPS[0]).recrawl_due, FPS[0]) == T0 + 999


def test_state_from_before_page_shards_is_read_claimed_and_moved(redis_url, redis_client) -> None:
    """A sharded crawl started before page shards kept its state under {rc}: a new
    store claims it there, and a page's next fetch moves it to its shard."""

    async def before() -> None:
        store = make_store(redis_url)  # no G:shards yet: the one place, {rc}
        for fp in FPS[:6]:
            await record(store, fetch(fp, T0, None))
        await store.close()

    run(before())
    legacy = FrontierKeys("rc").legacy_pages
    assert redis_client.zcard(legacy.recrawl_due) == 6
    redis_client.set(KEYS.shards, SHARDS)

    async def after() -> tuple[list[str], int, bool]:
        store = make_store(redis_url)
        claimed = sorted(row[0] for row in (await store.claim(10, T0 + INTERVAL)).rows)
        for fp in claimed:
            prev = await store.load(fp)
            assert prev is not None and prev.legacy and prev.visits == 1
            await store.record(fetch(fp, T0 + INTERVAL + 1, False), prev)
        again = await store.load(FPS[0])
        await store.claim(10, T0 + INTERVAL + 2)  # finds the old place empty: stops looking
        return claimed, again.visits if again else 0, store.layout.legacy is None

    assert run(after()) == (FPS[:6], 2, True)
    assert not redis_client.exists(legacy.recrawl_due, legacy.recrawl_claims, legacy.recrawl_rates)
    assert not list(redis_client.scan_iter(match=legacy.doc("*")))
    assert sum(docs_per_shard(redis_client).values()) == 6


def test_admin_marks_and_counts_every_shard_and_the_old_place(redis_url, redis_client) -> None:
    redis_client.set(KEYS.shards, SHARDS)

    async def go() -> None:
        store = make_store(redis_url)
        for fp in FPS[:10]:
            await record(store, fetch(fp, T0, None))
        await store.close()

    run(go())
    legacy = FrontierKeys("rc").legacy_pages  # one page left from before page shards
    redis_client.set(legacy.doc("old"), '{"u":"http://h.test/old","at":1}')
    redis_client.zadd(legacy.recrawl_due, {"old": T0 + 5000})
    admin = FrontierAdmin(redis_client, ShardedKeys("rc", SHARDS), lambda _ip: None)
    marked = admin.mark_due(lambda url: url.startswith("http://h.test/"), T0 + 1)
    assert (marked.stored, marked.matched, marked.made_due) == (11, 11, 11)
    stats = admin.recrawl_stats(T0 + 1)
    assert (stats.stored_urls, stats.due_now, stats.rates) == (11, 11, {NEW_BUCKET: 10})
