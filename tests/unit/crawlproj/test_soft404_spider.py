"""The spider and the content pipelines on hand-made responses, real Redis and a file
page store: soft-404 probes and marks, links not followed from soft-404s and exact
duplicates, the frontier outcome, and a link scrapy.Request refuses."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy import Request
from scrapy.http import Headers, Response
from scrapy.responsetypes import responsetypes
from scrapy.utils.test import get_crawler

import crawlproj.spiders.page_parse as page_parse
from crawlproj.checkpoint import checkpoint_for
from crawlproj.items import PageItem, is_exact_duplicate
from crawlproj.pipelines.content import TEMPLATE_COPY_META, ContentDedupPipeline
from crawlproj.pipelines.metadata import MetadataPipeline
from crawlproj.pipelines.soft404 import Soft404Pipeline
from crawlproj.pipelines.store import PageStorePipeline
from crawlproj.spiders.web import WebSpider, frontier_outcome
from extensions.content.soft404 import PROBE_SUFFIX, SECOND_PROBE_META
from extensions.state.connection import redis_lifecycle
from tests.integration.twin_web import pages as twin_pages
from tests.project_settings import project_values
from tests.unit.content import soft404_pages as corpus

HTML = "text/html; charset=utf-8"
ORIGIN = "http://walkers.test"
PROBE = f"{ORIGIN}/00aa11bb22cc33dd{PROBE_SUFFIX}"
Output = tuple[list[PageItem], list[Request]]


class Crawl:
    """One crawler: the spider's callbacks, each item through the pipelines in order."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.crawler = get_crawler(WebSpider, project_values(settings))
        self.crawler.spider = WebSpider.from_crawler(self.crawler, seeds=f"{ORIGIN}/")
        self.spider: WebSpider = self.crawler.spider
        self.pipelines = [
            ContentDedupPipeline.from_crawler(self.crawler),
            Soft404Pipeline.from_crawler(self.crawler),
            PageStorePipeline.from_crawler(self.crawler),
            MetadataPipeline.from_crawler(self.crawler),
        ]
        checkpoint_for(self.crawler)

    def stat(self, name: str) -> Any:
        return self.crawler.stats.get_value(name)

    async def drive(
        self, callback: Callable[[Response], AsyncIterator[Any]], r: Response
    ) -> Output:
        """What the callback yields; each item goes through the pipelines while the
        callback waits at its checkpoint (as Scrapy's scraper runs them)."""
        items, requests = [], []
        async for out in callback(r):
            if isinstance(out, PageItem):
                for pipeline in self.pipelines:
                    out = await pipeline.process_item(out)
                items.append(out)
            else:
                requests.append(out)
        return items, requests

    def run(self, steps: Callable[[Crawl], Any]) -> Any:
        async def go() -> Any:
            for pipeline in self.pipelines:
                if hasattr(pipeline, "open_spider"):
                    await pipeline.open_spider()
            try:
                return await steps(self)
            finally:
                for pipeline in self.pipelines:
                    if hasattr(pipeline, "close_spider"):
                        await pipeline.close_spider()
                redis_lifecycle(self.crawler).close()

        return asyncio.run(go())

    async def page(self, url: str, body: str | bytes, **kw: Any) -> tuple[PageItem, list[Request]]:
        (item,), requests = await self.drive(self.spider.parse, response(url, body, **kw))
        return item, requests

    async def probe(self, url: str, body: str, **kw: Any) -> list[Request]:
        """The answer to a probe the spider sent: no row, no link; the origin's second
        probe after a first soft answer with text."""
        sent = [r async for r in self.spider.parse_probe(response(url, body, **kw))]
        assert all(r.url.endswith(PROBE_SUFFIX) for r in sent)
        return sent


def response(
    url: str,
    body: str | bytes,
    status: int = 200,
    meta: dict[str, Any] | None = None,
    redirected_from: str | None = None,
) -> Response:
    request = Request(url, meta=dict(meta or {}))
    if redirected_from:
        request.meta["redirect_urls"] = [redirected_from]
    headers = Headers({"Content-Type": HTML})
    raw = body.encode() if isinstance(body, str) else body
    cls = responsetypes.from_args(headers=headers, url=url, body=raw)
    return cls(url=url, status=status, headers=headers, body=raw, request=request)


@pytest.fixture
def crawl(redis_client: redis.Redis, redis_url: str, tmp_path: Path) -> Crawl:
    return Crawl(
        {
            "REDIS_URL": redis_url,
            "FRONTIER_CRAWL_NAME": f"t{uuid.uuid4().hex[:8]}",
            "PAGESTORE_URI": f"file://{tmp_path}/pages",
        }
    )


def links(requests: list[Request]) -> list[str]:
    return [r.url for r in requests if not r.url.endswith(PROBE_SUFFIX)]


def probes(requests: list[Request]) -> list[Request]:
    return [r for r in requests if r.url.endswith(PROBE_SUFFIX)]


def missing(path: str) -> str:
    return corpus.not_found("divs", "links", path, seed=7)


def test_the_first_page_of_an_origin_sends_its_probe_once(crawl: Crawl) -> None:
    async def steps(c: Crawl) -> tuple[Any, ...]:
        home, first = await c.page(f"{ORIGIN}/", corpus.home("divs"))
        contact, second = await c.page(f"{ORIGIN}/contact", corpus.real_pages("divs")["contact"])
        return home, first, contact, second

    home, first, contact, second = crawl.run(steps)
    (probe,) = probes(first)
    assert probe.url.startswith(f"{ORIGIN}/") and probe.url.endswith(PROBE_SUFFIX)
    assert probe.dont_filter and probe.callback == crawl.spider.parse_probe
    assert probe.errback == crawl.spider.on_probe_error
    assert probe.meta == {"frontier_priority": 0}
    assert probes(second) == [] and links(first) and links(second)
    # Neither page could be compared yet (the probe has not answered).
    assert home["soft_404"] is None and contact["soft_404"] is None
    assert crawl.stat("content/soft404/claimed") == 1
    assert crawl.stat("content/soft404/unchecked") == 1
    assert crawl.stat("crawlproj/soft404/probes_sent") == 1


def test_an_origin_whose_first_page_is_a_copy_waits_for_one_of_its_own(crawl: Crawl) -> None:
    """A mirror's (or a made-up subdomain's) copy does not claim its origin: no probe
    for an origin that has shown nothing of its own yet."""
    mirror = "http://mirror.test"
    home = corpus.home("divs")

    async def steps(c: Crawl) -> tuple[Any, ...]:
        await c.page(f"{ORIGIN}/", home)
        _copy, copied = await c.page(f"{mirror}/", home)
        _own, own = await c.page(f"{mirror}/contact", corpus.real_pages("divs")["contact"])
        return copied, own

    copied, own = crawl.run(steps)
    assert probes(copied) == []
    (probe,) = probes(own)
    assert probe.url.startswith(f"{mirror}/")
    assert crawl.stat("content/soft404/deferred") == 1
    assert crawl.stat("content/soft404/claimed") == 2


def test_soft_404s_are_marked_not_stored_and_lead_nowhere(crawl: Crawl) -> None:
    async def steps(c: Crawl) -> tuple[Any, ...]:
        await c.page(f"{ORIGIN}/", corpus.home("divs"))
        await c.probe(PROBE, missing(PROBE.removeprefix(ORIGIN)))
        gone = await c.page(f"{ORIGIN}/walks/old-harbour", missing("/walks/old-harbour"))
        contact = await c.page(f"{ORIGIN}/contact", corpus.real_pages("divs")["contact"])
        return gone, contact

    (gone, after_gone), (contact, after_contact) = crawl.run(steps)
    assert gone["soft_404"] is True and gone["content_ref"] is None
    assert after_gone == []  # its five random links are not followed
    assert contact["soft_404"] is False and contact["content_ref"]
    assert links(after_contact)
    assert crawl.stat("content/soft404/probes") == 1
    assert crawl.stat("content/soft404/hosts_with_soft404") == 1
    assert crawl.stat("content/soft404/detected") == 1
    assert crawl.stat("content/soft404/checked") == 1
    assert crawl.stat("pagestore/skipped_soft404") == 1
    assert crawl.stat("crawlproj/pages/soft_404_links_skipped") == 1
    # The probe has no row: nothing of its answer is in the duplicate index.
    assert gone["duplicate_of"] is None
    assert crawl.stat("rows/not_stored") == 1 and crawl.stat("rows/stored") == 2


def test_a_soft_answer_asks_for_a_second_probe_whose_answer_gives_the_template(
    crawl: Crawl,
) -> None:
    """Not-found pages that say something of their own each time (suggestions of random
    words: corpus "chatty") are too unlike one another for the word rule; what the two
    probes' answers share (the template) marks them."""
    second_url = f"{ORIGIN}/fedcba9876543210{PROBE_SUFFIX}"

    def chatty(url: str, seed: int) -> str:
        return corpus.not_found("divs", "chatty", url.removeprefix(ORIGIN), seed)

    async def steps(c: Crawl) -> tuple[Any, ...]:
        await c.page(f"{ORIGIN}/", corpus.home("divs"))
        asked = await c.probe(PROBE, chatty(PROBE, 1))
        before, _ = await c.page(f"{ORIGIN}/walks/a", chatty(f"{ORIGIN}/walks/a", 4))
        meta = {SECOND_PROBE_META: True}
        again = await c.probe(second_url, chatty(second_url, 3), meta=meta)
        after, followed = await c.page(f"{ORIGIN}/walks/b", chatty(f"{ORIGIN}/walks/b", 5))
        contact = await c.page(f"{ORIGIN}/contact", corpus.real_pages("divs")["contact"])
        return asked, before, again, after, followed, contact[0]

    asked, before, again, after, followed, contact = crawl.run(steps)
    assert len(asked) == 1 and asked[0].meta[SECOND_PROBE_META] and asked[0].dont_filter
    assert before["soft_404"] is False  # the first answer alone: the word rule only
    assert again == []  # two probes an origin, no more
    assert after["soft_404"] is True and followed == [] and after["content_ref"] is None
    assert contact["soft_404"] is False
    assert crawl.stat("content/soft404/second_probes") == 1
    assert crawl.stat("content/soft404/templates") == 1


def test_an_origin_answering_404_is_honest(crawl: Crawl) -> None:
    async def steps(c: Crawl) -> tuple[Any, ...]:
        await c.page(f"{ORIGIN}/", corpus.home("divs"))
        await c.probe(PROBE, missing(PROBE.removeprefix(ORIGIN)), status=404)
        return await c.page(f"{ORIGIN}/walks/old-harbour", missing("/walks/old-harbour"))

    page, requests = crawl.run(steps)
    # A 200 of an honest origin is a real page, even one that reads like a not-found.
    assert page["soft_404"] is False and page["content_ref"] and links(requests)
    assert crawl.stat("content/soft404/probes") == 1
    assert crawl.stat("content/soft404/honest") == 1
    assert crawl.stat("content/soft404/hosts_with_soft404") is None


def test_a_probe_redirected_home_marks_later_copies_redirected_there(crawl: Crawl) -> None:
    """The first page redirected to the probe's final URL may be the only fetch of the
    home page (URL-seen): it is kept; later ones are soft-404s."""
    home = corpus.home("divs")

    async def steps(c: Crawl) -> list[tuple[PageItem, list[Request]]]:
        await c.page(f"{ORIGIN}/walks", corpus.real_pages("divs")["tag"])
        await c.probe(f"{ORIGIN}/", home, meta={"redirect_urls": [PROBE]})
        return [
            await c.page(f"{ORIGIN}/", home, redirected_from=f"{ORIGIN}/old-walks"),
            await c.page(f"{ORIGIN}/", home, redirected_from=f"{ORIGIN}/older-walks"),
            await c.page(f"{ORIGIN}/", home),
        ]

    (first, first_links), (second, second_links), (root, _) = crawl.run(steps)
    assert first["url"] == f"{ORIGIN}/old-walks" and first["soft_404"] is False
    assert first["content_ref"] and links(first_links)
    assert second["soft_404"] is True and second["duplicate_of"] == first["url"]
    assert second_links == []
    assert root["soft_404"] is False  # the root itself is never a soft-404
    assert crawl.stat("content/soft404/detected") == 1


def test_exact_duplicates_follow_no_links_and_near_duplicates_do(crawl: Crawl) -> None:
    site = twin_pages()

    async def steps(c: Crawl) -> dict[str, tuple[PageItem, list[Request]]]:
        out = {}
        for path in ("/doc", "/doc-copy", "/doc-updated"):
            out[path] = await c.page(f"http://twins.test{path}", site[path][1])
        return out

    rows = crawl.run(steps)
    (doc, doc_links), (copy, copy_links), (near, near_links) = rows.values()
    assert copy["duplicate_of"] == near["duplicate_of"] == doc["url"]
    # What tells them apart (crawlproj/items.py): a near duplicate's simhash distance.
    assert is_exact_duplicate(copy) and not is_exact_duplicate(near)
    assert near["simhash_distance"] is not None and copy["resemblance"] == 1.0
    assert links(doc_links) and links(near_links) == links(doc_links)
    assert copy_links == []
    assert crawl.stat("crawlproj/pages/exact_duplicate_links_skipped") == 1


def test_the_frontier_outcome_is_left_on_the_response(crawl: Crawl) -> None:
    site = twin_pages()

    async def steps(c: Crawl) -> list[Any]:
        out = []
        for url, body, status in (
            ("http://twins.test/doc", site["/doc"][1], 200),
            ("http://twins.test/doc-copy", site["/doc-copy"][1], 200),
            ("http://twins.test/doc", b"", 304),
            ("http://twins.test/ref", b"not found", 404),
        ):
            r = response(url, body, status=status)
            await c.drive(c.spider.parse, r)
            out.append(r.meta.get("frontier_outcome"))
        return out

    assert crawl.run(steps) == ["new", "duplicate", "unchanged", None]


def test_frontier_outcome_of_each_kind_of_row() -> None:
    assert frontier_outcome(PageItem(status=200, soft_404=True, duplicate_of="x")) == "soft_404"
    assert frontier_outcome(PageItem(status=200, change="unchanged", duplicate_of="x")) == (
        "unchanged"
    )
    assert frontier_outcome(PageItem(status=200, duplicate_of="x")) == "duplicate"
    # A copy of a page of its own pattern (a growing query): "copy" recounts that page.
    grown = PageItem(status=200, url="http://h.test/s?q=a+b", duplicate_of="http://h.test/s?q=a")
    assert frontier_outcome(grown) == "copy"
    other = PageItem(status=200, url="http://h.test/b/x", duplicate_of="http://h.test/a")
    assert frontier_outcome(other) == "duplicate"
    # A template copy of the same path pattern on another host (one site's software on
    # two hosts: its first page here was the template too) is a copy; an exact
    # duplicate there (a mirror) stays a duplicate.
    meta = {TEMPLATE_COPY_META: "http://a.test/diary?d=20240105"}
    day = PageItem(status=200, url="http://b.test/diary?d=20240108")
    assert frontier_outcome(day, meta) == "copy"
    elsewhere = PageItem(status=200, url="http://b.test/agenda?d=20240108")
    assert frontier_outcome(elsewhere, meta) == "duplicate"
    mirror = PageItem(status=200, url="http://b.test/page/3", duplicate_of="http://a.test/page/3")
    assert frontier_outcome(mirror) == "duplicate"
    assert frontier_outcome(PageItem(status=204)) == "new"
    # A filter page naming its listing as canonical is a variant of it, new words or not.
    facet = PageItem(
        status=200, url="http://h.test/shop/?tone=warm", canonical="http://h.test/shop/"
    )
    assert frontier_outcome(facet) == "duplicate"
    itself = PageItem(status=200, url="http://h.test/shop/", canonical="http://h.test/shop/")
    assert frontier_outcome(itself) == "new"
    assert frontier_outcome(PageItem(status=404)) is None
    assert frontier_outcome(PageItem(status=500)) is None


def test_a_link_scrapy_refuses_costs_only_itself(
    crawl: Crawl, monkeypatch: pytest.MonkeyPatch
) -> None:
    hrefs = [f"{ORIGIN}/a", "http://[::1", "javascript:void(0)", f"{ORIGIN}/b"]
    monkeypatch.setattr(page_parse, "extract_links", lambda response: hrefs)

    async def steps(c: Crawl) -> list[Request]:
        _item, requests = await c.page(f"{ORIGIN}/", corpus.home("divs"))
        return requests

    assert links(crawl.run(steps)) == [f"{ORIGIN}/a", f"{ORIGIN}/b"]
    assert crawl.stat("crawlproj/links/skipped/invalid") == 2


def test_a_soft_origins_page_has_its_main_text_extracted_once(
    crawl: Crawl, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The soft-404 check reads the main text the duplicate check extracted."""
    import crawlproj.pipelines.signature as content  # where the pipelines extract it
    import extensions.content.soft404 as soft404

    calls: list[str] = []

    def counted(module: Any) -> Callable[[str | bytes], Any]:
        real = module.page_text

        def page_text(html: str | bytes) -> Any:
            calls.append(module.__name__)
            return real(html)

        return page_text

    monkeypatch.setattr(content, "page_text", counted(content))
    monkeypatch.setattr(soft404, "page_text", counted(soft404))

    async def steps(c: Crawl) -> tuple[Any, ...]:
        await c.page(f"{ORIGIN}/", corpus.home("divs"))
        await c.probe(PROBE, missing(PROBE.removeprefix(ORIGIN)))
        calls.clear()
        gone = await c.page(f"{ORIGIN}/walks/old-harbour", missing("/walks/old-harbour"))
        return gone, list(calls)

    (gone, _), extracted = crawl.run(steps)
    assert gone["soft_404"] is True  # compared by text: the check did read it
    assert crawl.stat("content/soft404/detected") == 1
    assert extracted == [content.__name__]
