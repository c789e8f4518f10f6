"""ContentTypeFilter: which responses are cut at headers_received, and what it counts.

The handler is reached through Scrapy's own `check_stop_download`, the call the HTTP/1.1
download handler makes once the headers are in, so the signal wiring is tested too.
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured, StopDownload
from scrapy.http.headers import Headers
from scrapy.utils._download_handlers import check_stop_download
from scrapy.utils.test import get_crawler

from extensions.fetch.content_type import (
    MAX_TYPE_STATS,
    ContentTypeFilter,
    media_type,
    robots_or_sitemap_path,
)
from tests.project_settings import project_values


def crawler_with_filter(**values: Any) -> Crawler:
    crawler = get_crawler(settings_dict=project_values(values))
    assert crawler.stats is not None
    crawler.stats.open_spider()
    ContentTypeFilter.from_crawler(crawler)
    return crawler


def headers_in(crawler: Crawler, url: str, content_type: str | None, **meta: Any) -> bool:
    """True if the filter stopped this response at its headers."""
    headers = Headers({"Content-Type": content_type} if content_type is not None else {})
    stop = check_stop_download(
        signals.headers_received, crawler, Request(url, meta=meta), headers=headers, body_length=0
    )
    assert stop is None or isinstance(stop, StopDownload)
    if stop is not None:
        assert stop.fail is False  # the callback gets the response, not the errback
    return stop is not None


def stats(crawler: Crawler) -> dict[str, Any]:
    assert crawler.stats is not None
    return {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("fetch/")}


@pytest.mark.parametrize(
    "content_type", ["text/html", "text/html; charset=utf-8", "TEXT/HTML", "application/xhtml+xml"]
)
def test_pages_are_downloaded(content_type: str) -> None:
    crawler = crawler_with_filter()
    assert not headers_in(crawler, "http://a.test/page", content_type)
    assert stats(crawler) == {"fetch/content_type/kept": 1}


def test_other_types_are_cut_and_counted_by_type() -> None:
    crawler = crawler_with_filter()
    assert headers_in(crawler, "http://a.test/report", "application/pdf")
    assert headers_in(crawler, "http://a.test/dump", "text/plain; charset=utf-8")
    assert headers_in(crawler, "http://a.test/dump2", "text/plain")
    assert not headers_in(crawler, "http://a.test/", "text/html")
    assert stats(crawler) == {
        "fetch/content_type/aborted/application/pdf": 1,
        "fetch/content_type/aborted/text/plain": 2,
        "fetch/content_type/kept": 1,
    }


def test_a_response_without_content_type_is_kept() -> None:
    crawler = crawler_with_filter()
    assert not headers_in(crawler, "http://a.test/x", None)
    assert not headers_in(crawler, "http://a.test/y", "")
    assert stats(crawler) == {"fetch/content_type/kept": 2}


@pytest.mark.parametrize(
    ("url", "content_type", "meta"),
    [
        ("http://a.test/robots.txt", "text/plain", {}),
        # The frontier's robots.txt request, wherever a redirect took it.
        ("http://b.test/moved-robots", "text/plain", {"frontier_robots": "http://a.test"}),
        # robots.txt Sitemap: lines, whatever the server calls the file.
        ("http://a.test/sitemaps?page=1", "application/octet-stream", {"sitemap": True}),
        # nginx serves .gz as application/octet-stream; nested sitemaps carry no meta.
        ("http://a.test/sitemap_index.xml.gz", "application/octet-stream", {}),
        ("http://a.test/sitemap.XML", "text/plain", {}),
    ],
)
def test_robots_txt_and_sitemaps_are_never_cut(url: str, content_type: str, meta: Any) -> None:
    crawler = crawler_with_filter()
    assert not headers_in(crawler, url, content_type, **meta)


def test_text_plain_elsewhere_is_cut() -> None:
    crawler = crawler_with_filter()
    assert headers_in(crawler, "http://a.test/docs/robots.txt", "text/plain")
    assert headers_in(crawler, "http://a.test/_sources/index.rst.txt", "text/plain")


def test_the_wanted_list_is_a_setting() -> None:
    crawler = crawler_with_filter(CONTENT_TYPES_WANTED="text/html, Application/PDF")
    assert not headers_in(crawler, "http://a.test/report", "application/pdf")
    assert headers_in(crawler, "http://a.test/feed", "application/xml")


def test_stats_names_stay_bounded() -> None:
    crawler = crawler_with_filter()
    for n in range(MAX_TYPE_STATS + 5):
        assert headers_in(crawler, f"http://a.test/{n}", f"application/x-made-up-{n}")
    assert headers_in(crawler, "http://a.test/bad", "not a type")
    counted = stats(crawler)
    assert len(counted) == MAX_TYPE_STATS + 1
    assert counted["fetch/content_type/aborted/other"] == 6
    assert counted["fetch/content_type/aborted/application/x-made-up-0"] == 1


@pytest.mark.parametrize("value", [[], ""])  # "" is `-s CONTENT_TYPES_WANTED=`
def test_an_empty_list_switches_it_off(value: object) -> None:
    crawler = get_crawler(settings_dict=project_values({"CONTENT_TYPES_WANTED": value}))
    with pytest.raises(NotConfigured, match="CONTENT_TYPES_WANTED is empty"):
        ContentTypeFilter.from_crawler(crawler)


def test_a_bad_media_type_is_named() -> None:
    crawler = get_crawler(settings_dict=project_values({"CONTENT_TYPES_WANTED": "html,text/html"}))
    with pytest.raises(NotConfigured, match=r"^CONTENT_TYPES_WANTED must be media types like"):
        ContentTypeFilter.from_crawler(crawler)


def test_media_type_and_paths() -> None:
    assert media_type(Headers({"Content-Type": "Text/HTML ; charset=UTF-8"})) == "text/html"
    assert media_type(Headers({})) is None
    assert robots_or_sitemap_path("/robots.txt")
    assert robots_or_sitemap_path("/a/sitemap-1.xml.gz")
    assert not robots_or_sitemap_path("/a/robots.txt")
    assert not robots_or_sitemap_path("/archive.tar.gz")
    assert not robots_or_sitemap_path("/sitemap.xml/")
