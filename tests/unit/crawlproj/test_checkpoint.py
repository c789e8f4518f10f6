"""The checkpoint registry the spider waits on, and the metadata row it releases."""

from __future__ import annotations

import asyncio
import gc

import pytest
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from crawlproj.checkpoint import Checkpoint, CheckpointTimeout, checkpoint_for, wait_timeout
from crawlproj.feeds import add_default_feed
from crawlproj.items import ROW_FIELDS, PageItem
from crawlproj.pipelines.metadata import finalise_row, outcome_of
from crawlproj.settings import FEED_EXPORT_FIELDS
from extensions.pagestore.protocol import StoreUnavailable

RESPONSE = HtmlResponse("http://a.test/", body=b"<p>x</p>")


def run(coro):
    return asyncio.run(coro)


def test_wait_returns_the_outcome_set_while_it_waits() -> None:
    async def go() -> tuple[str, bool]:
        checkpoint, item = Checkpoint(), PageItem(url="http://a.test/")
        checkpoint.register(item, RESPONSE)
        assert checkpoint.response(item) is RESPONSE
        waiter = asyncio.ensure_future(checkpoint.wait(item))
        await asyncio.sleep(0.01)
        still_waiting = not waiter.done()
        checkpoint.resolve(item, "stored")
        checkpoint.resolve(item, "duplicate")  # first outcome wins
        return await waiter, still_waiting and len(checkpoint) == 0

    assert run(go()) == ("stored", True)


def test_a_failed_store_raises_in_the_waiting_spider() -> None:
    async def go() -> None:
        checkpoint, item = Checkpoint(), PageItem(url="http://a.test/")
        checkpoint.register(item, RESPONSE)
        checkpoint.fail(item, StoreUnavailable("PAGESTORE_URI s3://b is unreachable"))
        await checkpoint.wait(item)

    with pytest.raises(StoreUnavailable, match="unreachable"):
        run(go())


def test_a_wait_nobody_resolves_times_out_and_is_forgotten() -> None:
    async def go() -> int:
        checkpoint, item = Checkpoint(timeout=0.05), PageItem(url="http://a.test/")
        checkpoint.register(item, RESPONSE)
        with pytest.raises(CheckpointTimeout):
            await checkpoint.wait(item)
        return len(checkpoint)

    assert run(go()) == 0


def test_unregistered_items_do_not_wait_and_copies_are_not_found() -> None:
    async def go() -> str:
        checkpoint, item = Checkpoint(), PageItem(url="http://a.test/")
        checkpoint.register(item, RESPONSE)
        assert checkpoint.response(item.copy()) is None  # keyed by the object, not its fields
        return await checkpoint.wait(PageItem(url="http://b.test/"))

    assert run(go()) == "unregistered"


def test_item_signals_resolve_what_no_pipeline_resolved() -> None:
    crawler = get_crawler()
    checkpoint = checkpoint_for(crawler)
    assert checkpoint_for(crawler) is checkpoint

    async def go() -> list[str]:
        items = [PageItem(url=f"http://a.test/{i}") for i in range(3)]
        for item in items:
            checkpoint.register(item, RESPONSE)
        checkpoint.item_scraped(item=items[0])
        checkpoint.item_dropped(item=items[1], exception=Exception("dropped"))
        checkpoint.item_error(item=items[2], failure=None)
        return [await checkpoint.wait(item) for item in items]

    assert run(go()) == ["scraped", "dropped", "error"]


def test_entries_die_with_their_item() -> None:
    async def go() -> int:
        checkpoint = Checkpoint()
        checkpoint.register(PageItem(url="http://a.test/"), RESPONSE)
        gc.collect()
        return len(checkpoint)

    assert run(go()) == 0


def test_the_wait_outlasts_every_store_retry() -> None:
    settings = Settings(
        {"PAGESTORE_RETRIES": 3, "PAGESTORE_TIMEOUT": 30, "PAGESTORE_RETRY_DELAY": 1}
    )
    assert wait_timeout(settings) > 4 * 2 * 30 + (1 + 2 + 4)


def test_rows_have_every_column_and_derived_fields() -> None:
    assert tuple(FEED_EXPORT_FIELDS) == ROW_FIELDS
    assert set(ROW_FIELDS) == set(PageItem.fields)
    row = finalise_row(PageItem(url="u", status=404, simhash=0xABC))
    assert row["http_status"] == 404 and row["simhash_hex"] == "0000000000000abc"
    assert set(row) == set(ROW_FIELDS) and row["content_ref"] is None
    assert outcome_of(row) == "not_stored"
    assert outcome_of(PageItem(duplicate_of="x")) == "duplicate"
    assert outcome_of(PageItem(content_ref="s3://b/k")) == "stored"


def test_the_default_feed_only_when_no_feed_is_named() -> None:
    settings = Settings({"CRAWL_ITEMS_URI": "%(data_dir)s/items/%(name)s.jsonl"})
    add_default_feed(settings)
    assert list(settings.getdict("FEEDS")) == ["%(data_dir)s/items/%(name)s.jsonl"]
    named = Settings({"CRAWL_ITEMS_URI": "x.jsonl", "FEEDS": {"out.jsonl": {"format": "jsonl"}}})
    add_default_feed(named)
    assert list(named.getdict("FEEDS")) == ["out.jsonl"]
