"""A host's catch-all patterns in the frontier's scripts (traps.lua `learn`, `charge`),
on a real Redis and a virtual clock: copies demote one but never close it, an older
crawl's closed one reopens, and only URLs charged to it are marked for dispatch to drop
when it closes (records.CATCH_MARK)."""

from __future__ import annotations

from scrapy import Request

from extensions.admission.patterns import url_patterns
from extensions.admission.records import CATCH_MARK
from tests.unit.admission.golden_admission import GoldenSpider, admission
from tests.unit.frontier.test_traps import HOST, IP, MakeFrontier, fetch_all, item, make, run

__all__ = ["make"]  # the fixture, imported for pytest


def test_copies_demote_a_hosts_catch_all_pattern_never_close_it(make: MakeFrontier) -> None:
    """Shapes seen once (a shop's products by their slugs) count under the host's coarse
    pattern, and so does every shape past the host's room for fine ones. Copies of filter
    pages that spill into it there must not close it: the products still queued would be
    dropped. (Sprawl pages still close it: test_sprawl.py.)"""

    async def go() -> tuple[bool, str, list[str]]:
        frontier = make(min_pages=3, close_share=0.8, demote_share=0.5, patterns_per_host=1)
        slugs = [f"http://{HOST}/shop/{w}-{n}x" for n, w in enumerate("abcdefghijkl")]
        await frontier.admit([item(url) for url in slugs[:8]])
        await fetch_all(frontier, "duplicate")  # every one bad
        coarse = url_patterns(slugs[0]).coarse
        closed = await frontier.redis.sismember(frontier.keys.key("closed_patterns"), coarse)
        raw = await frontier.redis.hget(frontier.keys.key("patterns"), coarse)
        later = await frontier.admit([item(url) for url in slugs[8:]])
        return bool(closed), raw.decode().split(",")[4], list(later.extra.get("refused") or [])

    closed, state, refused = run(go())
    assert (closed, state, refused) == (False, "1", [])  # demoted, still admitting


def test_a_catch_all_an_older_crawl_closed_reopens_at_its_next_outcome(
    make: MakeFrontier,
) -> None:
    async def go() -> bool:
        frontier = make(min_pages=3, close_share=0.8, patterns_per_host=1)
        slugs = [f"http://{HOST}/shop/{w}-{n}x" for n, w in enumerate("abcd")]
        coarse = url_patterns(slugs[0]).coarse
        closed_key = frontier.keys.key("closed_patterns")
        await frontier.admit([item(slugs[0])])
        await frontier.redis.hset(frontier.keys.key("patterns"), coarse, "5,5,5,0,2,0,5")
        await frontier.redis.sadd(closed_key, coarse)
        await fetch_all(frontier, "duplicate")
        return bool(await frontier.redis.sismember(closed_key, coarse))

    assert run(go()) is False


def test_only_urls_charged_to_a_catch_all_are_marked(make: MakeFrontier) -> None:
    """A shape seen once goes to the coarse pattern (marked); its second URL makes the
    shape's own pattern, and that URL is not marked: a closed /shop/* is no reason to
    drop it at dispatch."""

    async def go() -> list[bool]:
        frontier = make()
        urls = [f"http://{HOST}/shop/hats/item-{n}" for n in (1, 2, 3)]
        await frontier.admit([item(url) for url in urls])
        keys = [frontier.keys.back_queue(IP, lane) for lane in range(10)]
        records = [r.decode() for key in keys for r in await frontier.redis.lrange(key, 0, -1)]
        return [r.startswith(CATCH_MARK) for r in records]

    assert run(go()) == [True, False, False]


def test_dispatch_drops_by_a_closed_coarse_pattern_only_what_was_charged_to_it() -> None:
    adm = admission()
    url = "http://h.test/shop/hats/item-7"
    adm.item(Request(url), GoldenSpider())  # queued: its shape's first URL
    adm.closed_patterns = frozenset({url_patterns(url).coarse})
    assert adm.closed(url) is None  # its shape has a pattern of its own
    assert adm.closed(url, catch_all=True) == "pattern_closed"
    # Another URL of its shape admitted since: the shape has its pattern now.
    adm.item(Request("http://h.test/shop/hats/item-8"), GoldenSpider())
    assert adm.closed(url, catch_all=True) is None


def test_a_query_urls_closed_coarse_pattern_drops_it_always() -> None:
    """host/seg/*? holds query variants alone (reply copies of products each their own
    shape): its closure drops them at dispatch, charged there or not."""
    adm = admission()
    url = "http://h.test/shop/bags/daiko-vek-4?replytocom=5"
    adm.closed_patterns = frozenset({url_patterns(url).coarse})
    assert adm.closed(url) == "pattern_closed"
