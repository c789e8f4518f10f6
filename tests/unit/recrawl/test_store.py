"""Re-crawl state in a real Redis: claim (a lease on due URLs), record, forget, mark
(`scrapy recrawl`) and sitemap lastmod hints."""

from __future__ import annotations

import asyncio
import random
from email.utils import formatdate

import pytest
import redis.asyncio as aioredis

from extensions.fetch.http_dates import w3c_time
from extensions.recrawl.schedule import NEW_BUCKET, ScheduleConfig, rate_bucket
from extensions.recrawl.state import DocState, Fetch, RecrawlConfig, RecrawlStore, lua
from extensions.state.keys import FrontierKeys

T0 = 1_700_000_000.0
PAGES = FrontierKeys("rc").legacy_pages  # unsharded: the crawl's own tag
INTERVAL = 100.0


def make_store(redis_url: str) -> RecrawlStore:
    schedule = ScheduleConfig(interval=INTERVAL, min_interval=10.0, max_interval=10_000.0)
    config = RecrawlConfig(
        claim_ttl=50.0, history=4, min_history=1, schedule=schedule, schedule_refresh=1e9
    )
    return RecrawlStore(aioredis.Redis.from_url(redis_url), FrontierKeys("rc"), config)


def fetch(fp: str, at: float, changed: bool | None, **fields: str) -> Fetch:
    base = {"etag": '"v1"', "ch": "hash1", "ref": "file:///x"}
    return Fetch(fp, f"http://h.test/{fp}", at, changed, {**base, **fields})


async def record(store: RecrawlStore, f: Fetch) -> float:
    return await store.record(f, await store.load(f.fp))


def run(coro):
    return asyncio.run(coro)


def test_first_fetch_is_due_after_the_interval_and_claimed_once(redis_url, redis_client) -> None:
    async def go() -> None:
        store = make_store(redis_url)
        await record(store, fetch("a", T0, None))
        state = await store.load("a")
        assert state is not None and state.visits == 1 and state.obs == ()
        assert await store.due_now(T0 + INTERVAL - 1) == 0
        claim = await store.claim(10, T0 + INTERVAL)
        assert claim.due_left == 0 and claim.rows == [["a", "http://h.test/a", '"v1"', "", "", "0"]]
        # Claimed: not handed to another worker until the claim expires...
        assert claim.next_due == pytest.approx(T0 + INTERVAL + 50)
        assert (await store.claim(10, T0 + INTERVAL + 49)).rows == []
        assert [r[0] for r in (await store.claim(10, T0 + INTERVAL + 50)).rows] == ["a"]
        await store.close()

    run(go())


def test_visits_build_history_rate_and_histogram(redis_url, redis_client) -> None:
    async def go() -> None:
        store = make_store(redis_url)
        keys = PAGES
        await record(store, fetch("b", T0, None))
        assert await redis_client_hgetall(redis_url, keys.recrawl_rates) == {NEW_BUCKET: 1}
        rate = await record(store, fetch("b", T0 + 100, True, ch="hash2"))
        assert rate > 0
        rate = await record(store, fetch("b", T0 + 200, False, ch="hash2"))
        state = await store.load("b")
        assert state is not None
        assert state.obs == ((100.0, True, -1.0), (100.0, False, -1.0)) and state.visits == 3
        assert state.content_hash == "hash2" and state.rate == pytest.approx(rate)
        assert await redis_client_hgetall(redis_url, keys.recrawl_rates) == {rate_bucket(rate): 1}
        for i in range(3, 9):  # history keeps the last RECRAWL_HISTORY visits
            await record(store, fetch("b", T0 + 100 * i, False))
        assert len((await store.load("b")).obs) == 4  # type: ignore[union-attr]
        await store.close()

    run(go())


def test_last_modified_gives_the_age_of_a_change(redis_url, redis_client) -> None:
    async def go() -> DocState | None:
        store = make_store(redis_url)
        await record(store, fetch("n", T0, None))
        changed_at = formatdate(T0 + 90, usegmt=True)  # 10 s before the next visit
        await store.record(
            Fetch("n", "http://h.test/n", T0 + 100, True, {"ch": "h2"}, last_modified=changed_at),
            await store.load("n"),
        )
        stale = formatdate(T0 - 50, usegmt=True)  # before our previous visit: not this change
        await store.record(
            Fetch("n", "http://h.test/n", T0 + 200, True, {"ch": "h3"}, last_modified=stale),
            await store.load("n"),
        )
        state = await store.load("n")
        await store.close()
        return state

    state = run(go())
    assert state is not None
    assert state.obs == ((100.0, True, 9.5), (100.0, True, -1.0))  # mid-second: 10 - 0.5


def test_few_visits_do_not_steer_the_schedule(redis_url, redis_client) -> None:
    async def go() -> dict[str, int]:
        store = make_store(redis_url)
        store.config = RecrawlConfig(history=8, min_history=3, schedule=store.config.schedule)
        for i in range(3):  # two observed intervals: still "new"
            await record(store, fetch("p", T0 + 100 * i, None if i == 0 else True))
        before = await redis_client_hgetall(redis_url, PAGES.recrawl_rates)
        await record(store, fetch("p", T0 + 300, True))  # the third: estimated
        after = await redis_client_hgetall(redis_url, PAGES.recrawl_rates)
        await store.close()
        assert before == {NEW_BUCKET: 1}
        return after

    assert NEW_BUCKET not in run(go())


def test_an_older_observation_changes_nothing(redis_url, redis_client) -> None:
    async def go() -> None:
        store = make_store(redis_url)
        await record(store, fetch("c", T0 + 50, None, ch="new"))
        stale = await store.load("c")
        await store.record(fetch("c", T0, None, ch="old"), stale)
        assert (await store.load("c")).content_hash == "new"  # type: ignore[union-attr]
        await store.close()

    run(go())


def test_forget_drops_state_due_time_and_histogram(redis_url, redis_client) -> None:
    async def go() -> None:
        store = make_store(redis_url)
        await record(store, fetch("d", T0, None))
        await store.forget("d", T0 + 1)
        assert await store.load("d") is None
        assert await store.due_now(T0 + 1e9) == 0
        assert await redis_client_hgetall(redis_url, PAGES.recrawl_rates) == {}
        await store.close()

    run(go())


def test_last_modified_hint_shortens_a_new_pages_first_interval(redis_url, redis_client) -> None:
    async def go() -> None:
        store = make_store(redis_url)
        recent = formatdate(T0 - 30, usegmt=True)  # modified 30 s before the fetch
        await store.record(Fetch("e", "http://h.test/e", T0, None, {}, last_modified=recent), None)
        old = formatdate(T0 - 10 * 86400, usegmt=True)
        await store.record(Fetch("f", "http://h.test/f", T0, None, {}, last_modified=old), None)
        due = dict(await store.redis.zrange(PAGES.recrawl_due, 0, -1, withscores=True))
        assert due[b"e"] == pytest.approx(T0 + 30) and due[b"f"] == pytest.approx(T0 + INTERVAL)
        await store.close()

    run(go())


def test_sitemap_lastmod_makes_only_older_copies_due(redis_url, redis_client) -> None:
    async def go() -> None:
        store = make_store(redis_url)
        await record(store, fetch("g", T0, None))
        await record(store, fetch("h", T0, None))
        moved = await store.hint_lastmod([("g", T0 + 5), ("h", T0 - 5), ("zz", T0 + 5)], T0 + 10)
        assert moved == 1
        claim = await store.claim(10, T0 + 10)
        assert [r[0] for r in claim.rows] == ["g"] and claim.due_left == 0
        assert claim.next_due == pytest.approx(T0 + INTERVAL)  # h: due after its interval
        await store.close()

    run(go())


def test_mark_skips_claimed_urls(redis_url, redis_client) -> None:
    async def go() -> list[int]:
        store = make_store(redis_url)
        for fp in ("i", "j", "k"):
            await record(store, fetch(fp, T0, None))
        await store.claim(1, T0 + INTERVAL)  # claims "i"
        await store.redis.zadd(PAGES.recrawl_due, {"j": T0 + 1, "k": T0 + 5000})
        mark = store.redis.register_script(lua("mark"))
        reply = await mark(
            keys=[PAGES.recrawl_due, PAGES.recrawl_claims],
            args=[T0 + INTERVAL + 1, "i", "j", "k"],
        )
        await store.close()
        return [int(x) for x in reply]

    assert run(go()) == [1, 1, 1]  # k made due, j already due, i being re-fetched


def test_w3c_lastmod_forms() -> None:
    assert w3c_time("2024-01-01") == pytest.approx(1704067200.0)
    assert w3c_time("2024-01-01T01:00:00+01:00") == pytest.approx(1704067200.0)
    assert w3c_time("2024-01-01T00:00:00Z") == pytest.approx(1704067200.0)
    assert w3c_time("yesterday") is None and w3c_time(None) is None


def test_docstate_decodes_what_record_wrote(redis_url, redis_client) -> None:
    async def go() -> DocState | None:
        store = make_store(redis_url)
        await record(store, fetch("m", T0, None, sh=f"{random.getrandbits(64):016x}"))
        state = await store.load("m")
        await store.close()
        return state

    state = run(go())
    assert state is not None and state.url == "http://h.test/m" and len(state.simhash) == 16


async def redis_client_hgetall(redis_url: str, key: str) -> dict[str, int]:
    client = aioredis.Redis.from_url(redis_url)
    raw = await client.hgetall(key)
    await client.aclose()
    return {k.decode(): int(v) for k, v in raw.items()}


def test_a_page_is_capped_only_on_a_cautious_estimate(redis_url, redis_client) -> None:
    """Uniform at 100 s with the cap at F < 0.2 (lambda > ~0.05/s): a page estimated at
    0.06/s from 4 changes is not given up on (one standard error lower is 0.03/s); one
    estimated at 0.5/s from 16 changes is."""

    async def go() -> tuple[float, float]:
        store = make_store(redis_url)
        fast, borderline = rate_bucket(0.5), rate_bucket(0.06)
        store.schedule.update({fast: 1, borderline: 1, rate_bucket(0.001): 10})
        assert store.schedule.interval(borderline) == store.schedule.interval(fast) == 10_000.0
        out = (store._bucket(0.06, 4), store._bucket(0.5, 16))
        await store.close()
        return store.schedule.interval(out[0]), store.schedule.interval(out[1])

    borderline, fast = run(go())
    assert borderline < 10_000.0 and fast == 10_000.0
