"""FastOffsiteMiddleware decides as Scrapy's OffsiteMiddleware does, without the URL
parse while the spider has no allowed_domains."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.test import get_crawler

from extensions.fetch.offsite import FastOffsiteMiddleware

URLS = (
    "http://example.com/a",
    "http://sub.example.com/b",
    "http://other.org/c",
    "http://127.0.0.1:8080/d",
    "https://notexample.com/e",
)


def middleware(cls: type[OffsiteMiddleware], **attrs: Any) -> OffsiteMiddleware:
    crawler = get_crawler(type("S", (Spider,), {"name": "s", **attrs}))
    crawler.spider = crawler._create_spider()
    assert crawler.stats is not None
    crawler.stats.open_spider()
    mw = cls.from_crawler(crawler)
    mw.spider_opened(crawler.spider)
    return mw


def verdicts(mw: OffsiteMiddleware, **meta: Any) -> list[bool]:
    """True where the request is followed (process_request does not raise)."""
    followed = []
    for url in URLS:
        try:
            mw.process_request(Request(url, meta=meta))
        except IgnoreRequest:
            followed.append(False)
        else:
            followed.append(True)
    return followed


@pytest.mark.parametrize("allowed", [None, [], ["example.com"], ["other.org", "127.0.0.1"]])
def test_same_verdicts_and_stats_as_scrapy(allowed: list[str] | None) -> None:
    attrs = {} if allowed is None else {"allowed_domains": allowed}
    ours, scrapy_s = (
        middleware(FastOffsiteMiddleware, **attrs),
        middleware(OffsiteMiddleware, **attrs),
    )
    assert verdicts(ours) == verdicts(scrapy_s)
    assert verdicts(ours, allow_offsite=True) == [True] * len(URLS)
    assert ours.stats.get_stats() == scrapy_s.stats.get_stats()
    if allowed:  # the check did run: something was filtered
        assert not all(verdicts(ours))


def test_no_allowed_domains_skips_the_url_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    mw = middleware(FastOffsiteMiddleware)
    parsed: list[str] = []
    monkeypatch.setattr(
        "scrapy.downloadermiddlewares.offsite.urlparse_cached",
        lambda request: parsed.append(request.url),
    )
    assert verdicts(mw) == [True] * len(URLS)
    assert parsed == []


def test_allowed_domains_set_after_open_are_honoured() -> None:
    mw = middleware(FastOffsiteMiddleware)
    assert all(verdicts(mw))
    assert mw.crawler.spider is not None
    mw.crawler.spider.allowed_domains = ["example.com"]  # type: ignore[attr-defined]
    assert verdicts(mw) == [True, True, False, False, False]
    assert mw.stats.get_value("offsite/filtered") == 3
