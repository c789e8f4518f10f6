"""The content pipelines driven directly on responses: real Redis, real boto3 to moto.

Each page goes the way a crawl sends it: the spider's item (parse_page), the
checkpoint registry, then ContentDedupPipeline -> PageStorePipeline ->
MetadataPipeline, and the spider's wait on the checkpoint.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import logging
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy.exceptions import DropItem
from scrapy.http import Headers, Request
from scrapy.responsetypes import responsetypes
from scrapy.utils.test import get_crawler

from crawlproj.checkpoint import checkpoint_for
from crawlproj.pipelines.content import TEMPLATE_COPY_META, ContentDedupPipeline
from crawlproj.pipelines.metadata import MetadataPipeline
from crawlproj.pipelines.store import PageStorePipeline
from crawlproj.spiders.page_parse import parse_page
from crawlproj.spiders.web import WebSpider
from extensions.pagestore.protocol import StoreUnavailable, split_ref
from extensions.state.connection import redis_lifecycle
from tests.integration.s3_support import MotoServer, free_port
from tests.integration.twin_web import pages
from tests.project_settings import project_values

HTML = "text/html; charset=utf-8"


class Harness:
    """One crawler's content pipelines, run in order on hand-made responses."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.crawler = get_crawler(WebSpider, project_values(settings))
        self.crawler.spider = WebSpider.from_crawler(self.crawler, seeds="http://twins.test/")
        self.spider = self.crawler.spider
        self.checkpoint = checkpoint_for(self.crawler)
        self.pipelines = [
            ContentDedupPipeline.from_crawler(self.crawler),
            PageStorePipeline.from_crawler(self.crawler),
            MetadataPipeline.from_crawler(self.crawler),
        ]

    @property
    def stats(self) -> dict[str, Any]:
        return self.crawler.stats.get_stats()

    async def open(self) -> None:
        for pipeline in self.pipelines:
            if hasattr(pipeline, "open_spider"):
                await pipeline.open_spider()

    async def close(self) -> None:
        for pipeline in self.pipelines:
            if hasattr(pipeline, "close_spider"):
                await pipeline.close_spider()
        redis_lifecycle(self.crawler).close()

    async def page(self, url: str, body: bytes, content_type: str = HTML) -> tuple[Any, Any]:
        """(item or None if dropped, checkpoint outcome or the exception it raised)."""
        response = make_response(url, body, content_type)
        item = self.spider.page_item(response)
        item.update(parse_page(response, "crawlproj").fields)
        self.checkpoint.register(item, response)
        out: Any = item
        try:
            for pipeline in self.pipelines:
                out = await pipeline.process_item(out)
        except DropItem:
            out = None
        try:
            outcome: Any = await self.checkpoint.wait(item)
        except StoreUnavailable as exc:
            outcome = exc
        return out, outcome

    def run_twins(self, paths: Iterable[str]) -> list[Any]:
        """Open, put the twin site's `paths` through the pipelines in order, close:
        the row of each (None where it was dropped)."""
        site = pages()

        async def go() -> list[Any]:
            await self.open()
            try:
                return [
                    (await self.page(f"http://twins.test{p}", site[p][1], site[p][0]))[0]
                    for p in paths
                ]
            finally:
                await self.close()

        return run(go())


class ClosingEngine:
    """Stands in for the engine a crawl would have: records close requests."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    async def close_spider_async(self, *, reason: str) -> None:
        self.reasons.append(reason)


def make_response(url: str, body: bytes, content_type: str = HTML) -> Any:
    headers = Headers({"Content-Type": content_type})
    cls = responsetypes.from_args(headers=headers, url=url, body=body)
    return cls(url=url, status=200, headers=headers, body=body, request=Request(url))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def base_settings(redis_client: redis.Redis, redis_url: str) -> dict[str, Any]:
    return {
        "REDIS_URL": redis_url,
        "FRONTIER_CRAWL_NAME": f"t{uuid.uuid4().hex[:8]}",
        "PAGESTORE_RETRY_DELAY": 0.01,
        "PAGESTORE_TIMEOUT": 5.0,
    }


@pytest.fixture
def bucket(moto_s3: MotoServer) -> Iterator[str]:
    name = f"pages-{uuid.uuid4().hex[:8]}"
    moto_s3.client().create_bucket(Bucket=name)
    yield name


def test_a_body_lands_gzipped_under_its_sha256(moto_s3, bucket, base_settings) -> None:
    harness = Harness({**base_settings, **moto_s3.settings(f"s3://{bucket}/crawl1")})
    body = pages()["/other"][1]

    async def go() -> tuple[Any, Any]:
        await harness.open()
        try:
            return await harness.page("http://twins.test/other", body)
        finally:
            await harness.close()

    item, outcome = run(go())
    digest = hashlib.sha256(body).hexdigest()
    assert outcome == "stored"
    assert item["content_ref"] == f"s3://{bucket}/crawl1/{digest[:2]}/{digest}.html.gz"
    stored = moto_s3.client().get_object(Bucket=bucket, Key=f"crawl1/{digest[:2]}/{digest}.html.gz")
    assert gzip.decompress(stored["Body"].read()) == body
    assert item["simhash_hex"] == f"{item['simhash']:016x}" and item["http_status"] == 200
    assert harness.stats["pagestore/uploaded"] == 1 and harness.stats["content/unique"] == 1


def test_duplicates_upload_nothing(moto_s3, bucket, base_settings) -> None:
    harness = Harness({**base_settings, **moto_s3.settings(f"s3://{bucket}/p")})
    order = ["/doc", "/doc-copy", "/doc-updated", "/doc-all", "/other", "/notes.txt"]
    items = dict(zip(order, harness.run_twins(order), strict=True))
    original = "http://twins.test/doc"
    assert items["/doc"]["content_ref"] and items["/doc"]["duplicate_of"] is None
    for path in ("/doc-copy", "/doc-updated", "/doc-all"):
        assert items[path]["duplicate_of"] == original, path
        assert items[path]["content_ref"] is None, path
    assert items["/doc-copy"]["content_hash"] == items["/doc"]["content_hash"]
    stored = {split_ref(items[p]["content_ref"])[1] for p in ("/doc", "/other", "/notes.txt")}
    assert {k.removeprefix("p/") for k in moto_s3.keys(bucket)} == stored
    assert any(k.endswith(".gz") and not k.endswith(".html.gz") for k in stored)  # notes.txt
    stats = harness.stats
    assert stats["content/exact_duplicate"] == 1 and stats["content/near_duplicate"] == 2
    assert stats["pagestore/skipped_duplicate"] == 3 and stats["pagestore/uploaded"] == 3
    assert stats["rows/duplicate"] == 3 and stats["rows/stored"] == 3


def test_an_exact_copy_of_a_near_duplicate_points_at_the_stored_original(
    moto_s3, bucket, base_settings
) -> None:
    harness = Harness({**base_settings, **moto_s3.settings(f"s3://{bucket}")})
    updated, doc, copy = harness.run_twins(("/doc-updated", "/doc", "/doc-copy"))
    assert updated["content_ref"] and doc["duplicate_of"] == updated["url"]
    assert copy["duplicate_of"] == updated["url"]  # not /doc, whose body is not stored


def test_a_page_fetched_again_is_not_its_own_duplicate(moto_s3, bucket, base_settings) -> None:
    harness = Harness({**base_settings, **moto_s3.settings(f"s3://{bucket}")})
    body = pages()["/doc"][1]

    async def go() -> list[Any]:
        await harness.open()
        try:
            return [(await harness.page("http://twins.test/doc", body))[0] for _ in range(2)]
        finally:
            await harness.close()

    first, second = run(go())
    assert first["content_ref"] == second["content_ref"] is not None
    assert second["duplicate_of"] is None
    assert harness.stats["pagestore/existed"] == 1  # HEAD found it: no second upload


def test_an_unreachable_store_fails_the_checkpoint_after_retries(
    base_settings, caplog: pytest.LogCaptureFixture
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    settings = {
        **base_settings,
        "PAGESTORE_URI": "s3://pages/p",
        "AWS_ENDPOINT_URL": dead,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION_NAME": "us-east-1",
        "PAGESTORE_RETRIES": 2,
    }
    harness = Harness(settings)
    harness.crawler.engine = engine = ClosingEngine()
    site = pages()

    async def go() -> list[tuple[Any, Any]]:
        # No open(): its start-up check would refuse the dead store up front.
        await harness.pipelines[0].open_spider()
        try:
            return [
                await harness.page("http://twins.test/doc", site["/doc"][1]),
                await harness.page("http://twins.test/other", site["/other"][1]),
            ]
        finally:
            await harness.close()

    with caplog.at_level(logging.ERROR):
        (item1, outcome1), (item2, outcome2) = run(go())
    assert item1 is None and item2 is None  # dropped: no row claims a body
    assert isinstance(outcome1, StoreUnavailable) and isinstance(outcome2, StoreUnavailable)
    assert f"{dead}) is unreachable" in str(outcome1)
    stats = harness.stats
    assert stats["pagestore/retries"] == 2  # the second page failed fast, no retries
    assert stats["pagestore/failed"] == 2 and "rows/stored" not in stats
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "\n" not in errors[0].getMessage()
    assert engine.reasons == ["pagestore_unavailable"]  # the crawl is stopped once


def test_the_file_store_keeps_the_same_layout(tmp_path: Path, base_settings) -> None:
    harness = Harness({**base_settings, "PAGESTORE_URI": f"file://{tmp_path}/pages"})
    site = pages()
    doc, updated, other = harness.run_twins(("/doc", "/doc-updated", "/other"))
    files = sorted(p.relative_to(tmp_path / "pages") for p in (tmp_path / "pages").rglob("*.gz"))
    digests = [hashlib.sha256(site[p][1]).hexdigest() for p in ("/doc", "/other")]
    assert files == sorted(Path(d[:2]) / f"{d}.html.gz" for d in digests)
    assert doc["content_ref"] == f"file://{tmp_path}/pages/{digests[0][:2]}/{digests[0]}.html.gz"
    assert updated["duplicate_of"] == doc["url"] and other["content_ref"]
    assert not list((tmp_path / "pages").rglob(".tmp-*"))


def test_a_template_copy_is_a_deeper_page_not_a_listed_sibling(
    tmp_path: Path, base_settings
) -> None:
    """Pages that differ only in numbers (a manual's MSVC10, MSVC11 pages) listed by one
    index sit at one depth: not copies; the same template one link deeper (a
    calendar's next month) is."""
    harness = Harness({**base_settings, "PAGESTORE_URI": f"file://{tmp_path}/pages"})
    text = "True when using the Microsoft Visual Studio v{0}0 toolset (cl version {1})."

    async def go() -> list[bool]:
        await harness.open()
        copies = []
        try:
            for n, depth in ((10, 2), (11, 2), (12, 2), (14, 3)):
                body = f"<html><body><h1>MSVC{n}</h1><p>{text.format(n, n + 6)}</p></body></html>"
                url = f"http://twins.test/variable/MSVC{n}.html"
                response = make_response(url, body.encode())
                response.meta["depth"] = depth
                item = harness.spider.page_item(response)
                item.update(parse_page(response, "crawlproj").fields)
                harness.checkpoint.register(item, response)
                for pipeline in harness.pipelines:
                    item = await pipeline.process_item(item)
                copies.append(TEMPLATE_COPY_META in response.meta)
        finally:
            await harness.close()
        return copies

    assert run(go()) == [False, False, False, True]
    assert harness.stats["content/template_sibling"] == 2
    assert harness.stats["content/template_copy"] == 1


async def drive_parse(harness: Harness, response: Any) -> tuple[Any, bool, list[Any]]:
    """(item, spider still waiting before the pipelines ran, what it yielded after)."""
    agen = harness.spider.parse(response)
    item = await agen.__anext__()
    following = asyncio.ensure_future(agen.__anext__())
    await asyncio.sleep(0.2)
    waiting = not following.done()
    for pipeline in harness.pipelines:
        try:
            item = await pipeline.process_item(item)
        except DropItem:
            break
    try:
        rest = [await asyncio.wait_for(following, 5)]
    except StopAsyncIteration:
        return item, waiting, []
    rest += [out async for out in agen]
    return item, waiting, rest


def test_the_spider_follows_links_only_after_the_body_is_stored(
    moto_s3, bucket, base_settings
) -> None:
    harness = Harness({**base_settings, **moto_s3.settings(f"s3://{bucket}")})
    response = make_response("http://twins.test/", pages()["/"][1])

    async def go() -> tuple[Any, bool, list[Any]]:
        await harness.open()
        try:
            return await drive_parse(harness, response)
        finally:
            await harness.close()

    item, waiting, links = run(go())
    assert waiting, "the spider yielded links before its body was stored"
    assert item["content_ref"] and len(links) == 6
    assert all(isinstance(link, Request) for link in links)
    assert "frontier_release" not in response.request.meta


def test_the_spider_hands_the_page_back_when_the_store_fails(base_settings) -> None:
    settings = {
        **base_settings,
        "PAGESTORE_URI": "s3://pages",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION_NAME": "us-east-1",
        "PAGESTORE_RETRIES": 0,
    }
    harness = Harness(settings)
    response = make_response("http://twins.test/", pages()["/"][1])

    async def go() -> tuple[Any, bool, list[Any]]:
        await harness.pipelines[0].open_spider()
        try:
            return await drive_parse(harness, response)
        finally:
            await harness.close()

    _item, waiting, links = run(go())
    assert waiting and links == []
    assert response.request.meta["frontier_release"] is True
    assert harness.stats["crawlproj/pages/released"] == 1
