"""RecrawlLoadPipeline reads a URL's stored state only where there can be one: for a
request that bypassed URL-seen (a re-crawl, a retry), not for a new URL (real Redis)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from redis.exceptions import BusyLoadingError
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from crawlproj.checkpoint import checkpoint_for
from crawlproj.items import PageItem
from crawlproj.pipelines import recrawl
from crawlproj.pipelines.recrawl import PREV_STATE_META, RecrawlLoadPipeline
from extensions.admission.admit import seen_key
from extensions.recrawl.state import DocState
from tests.unit.recrawl.test_store import fetch, make_store

URL = "http://h.test/page"


def _page(status: int, dont_filter: bool) -> tuple[PageItem, HtmlResponse]:
    request = Request(URL, dont_filter=dont_filter)
    response = HtmlResponse(URL, status=status, body=b"<p>x</p>", request=request)
    item = PageItem(url=URL, fetched_at=datetime.now(UTC).isoformat())
    return item, response


def test_state_is_read_for_a_revisit_and_not_for_a_url_that_passed_url_seen(redis_url) -> None:
    async def go() -> None:
        crawler = get_crawler(settings_dict={"RECRAWL_ENABLED": True})
        pipeline = RecrawlLoadPipeline(crawler)
        pipeline.store = store = make_store(redis_url)
        fp = seen_key(URL)
        stored = fetch(fp, 1_700_000_000.0, None, etag='"v1"', ch="hash1")
        await store.record(stored, None)
        checkpoint = checkpoint_for(crawler)
        # A re-crawl's 304 (dont_filter, as the feeder sends it): the stored copy stands.
        item, response = _page(304, dont_filter=True)
        checkpoint.register(item, response)
        await pipeline.process_item(item)
        prev = response.meta[PREV_STATE_META]
        assert prev is not None and prev.content_hash == "hash1"
        assert item["change"] == "not_modified" and item["content_hash"] == "hash1"
        # A request admitted through URL-seen is a first fetch: no read (the state
        # recorded above is there, and is not looked at), and it is recorded as new.
        item, response = _page(200, dont_filter=False)
        checkpoint.register(item, response)
        await pipeline.process_item(item)
        assert PREV_STATE_META in response.meta and response.meta[PREV_STATE_META] is None
        assert "change" not in item
        assert crawler.stats.get_value("recrawl/load/read") == 1
        assert crawler.stats.get_value("recrawl/load/new_url") == 1
        await store.close()

    asyncio.run(go())


def test_a_restarting_redis_is_waited_for_and_one_that_stays_down_is_counted(
    redis_url, monkeypatch
) -> None:
    # BusyLoadingError: a restarted Redis replaying its AOF (a ConnectionError). The read
    # is tried again after each of RETRY_WAITS_S; past them the page goes on without its
    # state, counted (recrawl/redis_errors), as before; at once when the crawl is closing
    # (its frontier gave Redis up: the row must not hold the close).
    monkeypatch.setattr(recrawl, "RETRY_WAITS_S", (0.01, 0.01, 0.01))  # 3 waits, 4 tries
    closing = [False]
    monkeypatch.setattr(recrawl, "_closing", lambda _: closing[0])

    async def go(failures: int) -> tuple[bool, dict[str, int]]:
        crawler = get_crawler(settings_dict={"RECRAWL_ENABLED": True})
        pipeline = RecrawlLoadPipeline(crawler)
        pipeline.store = store = make_store(redis_url)
        await store.record(fetch(seen_key(URL), 1_700_000_000.0, None, ch="hash1"), None)
        load, left = store.load, [failures]

        async def restarting(fp: str) -> DocState | None:
            if left[0]:
                left[0] -= 1
                raise BusyLoadingError("Redis is loading the dataset in memory")
            return await load(fp)

        store.load = restarting  # type: ignore[method-assign]
        item, response = _page(304, dont_filter=True)
        checkpoint_for(crawler).register(item, response)
        await pipeline.process_item(item)
        await store.close()
        stats = crawler.stats.get_stats()
        counts = {k: v for k, v in stats.items() if k.startswith("recrawl/redis")}
        return PREV_STATE_META in response.meta, counts

    assert asyncio.run(go(2)) == (True, {"recrawl/redis_retries": 2})
    assert asyncio.run(go(4)) == (False, {"recrawl/redis_retries": 3, "recrawl/redis_errors": 1})
    closing[0] = True
    assert asyncio.run(go(2)) == (False, {"recrawl/redis_errors": 1})
