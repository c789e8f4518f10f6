"""Extractor registry by host pattern, the example extractor, and the spider's parse_page."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.http import HtmlResponse, Response, TextResponse

from crawlproj.extractors import Registry, registry
from crawlproj.extractors.testweb import page_summary
from crawlproj.spiders.page_parse import follow_links, parse_page
from scripts.testweb import HostSpec, WebSpec
from scripts.testweb.sites import Site


class Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = self.values.get(key, start) + count


def html(url: str, body: str) -> HtmlResponse:
    return HtmlResponse(url, body=body.encode(), encoding="utf-8")


def test_patterns_are_host_globs() -> None:
    reg = Registry()

    @reg.register("*.example.org", "example.org")
    def example(response: Any) -> dict[str, Any]:
        return {"site": "example"}

    @reg.register("docs.example.org")
    def docs(response: Any) -> dict[str, Any]:
        return {"section": "docs"}

    names = lambda host: [e.func.__name__ for e in reg.for_host(host)]  # noqa: E731
    assert names("example.org") == ["example"]
    assert names("WWW.Example.org.") == ["example"]
    assert names("docs.example.org") == ["example", "docs"]
    assert names("example.org.evil.net") == []
    assert names("notexample.org") == []


def test_fields_merge_in_registration_order_and_a_failure_is_contained() -> None:
    reg = Registry()
    stats = Stats()

    @reg.register("*")
    def first(response: Any) -> dict[str, Any]:
        return {"a": 1, "b": 1}

    @reg.register("*")
    def broken(response: Any) -> dict[str, Any]:
        raise RuntimeError("site changed its markup")

    @reg.register("*")
    def second(response: Any) -> dict[str, Any]:
        return {"b": 2}

    @reg.register("*")
    def not_a_dict(response: Any) -> Any:
        return ["x"]

    assert reg.run(html("http://any.test/", "<p>x</p>"), stats) == {"a": 1, "b": 2}
    errors = {k.rsplit(".", 1)[-1]: v for k, v in stats.values.items() if "/errors/" in k}
    assert errors == {"broken": 1, "not_a_dict": 1}
    assert sum(v for k, v in stats.values.items() if k.startswith("extractors/errors/")) == 2
    assert sum(v for k, v in stats.values.items() if k.startswith("extractors/ran/")) == 2


def test_registering_again_replaces_and_patterns_are_required() -> None:
    reg = Registry()

    def make(value: int):
        def extractor(response: Any) -> dict[str, Any]:
            return {"v": value}

        return extractor

    reg.register("*.test")(make(1))
    reg.register("*.test")(make(2))  # same module.qualname: a reload, not a second one
    assert len(reg.entries) == 1
    assert reg.run(html("http://a.test/", "<p/>")) == {"v": 2}
    with pytest.raises(ValueError, match="host pattern"):
        reg.register()


def test_the_example_extractor_reads_a_test_web_page() -> None:
    site = Site(WebSpec(hosts=[HostSpec("alpha.test", pages=3), HostSpec("beta.test")]), 8080)
    page = site.respond("alpha.test", "/page/2")
    response = HtmlResponse(site.url("alpha.test", "/page/2"), body=page.body, headers=page.headers)
    fields = page_summary(response)
    assert fields["title"].startswith("alpha.test /page/2: ")
    assert fields["heading"] == fields["title"]
    assert fields["word_count"] > 30
    assert fields["outlinks"] == len(follow_links(parse_page(response, "crawlproj"), response))


def test_parse_page_runs_extractors_on_html_of_matching_hosts_only() -> None:
    registry.load(["crawlproj.extractors"])
    body = "<html><head><title>T</title></head><body><h1>H</h1><a href=/x>x</a></body></html>"
    page = parse_page(html("http://a.test/", body), "crawlproj")
    assert page.fields["extracted"] == {
        "title": "T",
        "heading": "H",
        "word_count": 2,
        "outlinks": 1,
    }
    assert parse_page(html("http://example.org/", body), "crawlproj").fields["extracted"] is None
    text = TextResponse(
        "http://a.test/t.txt", body=b"plain", headers={"Content-Type": "text/plain"}
    )
    assert parse_page(text, "crawlproj").fields["extracted"] is None


def test_binary_responses_get_header_directives_and_no_links() -> None:
    headers = {
        "Content-Type": "application/pdf",
        "X-Robots-Tag": "noindex",
        "Link": '<http://a.test/doc>; rel="canonical"',
    }
    response = Response("http://a.test/doc.pdf", body=b"%PDF-1.7 \x00\x01", headers=headers)
    page = parse_page(response, "crawlproj")
    assert page.fields == {"noindex": True, "canonical": "http://a.test/doc", "extracted": None}
    stats = Stats()
    assert follow_links(page, response, stats) == []
    assert stats.values == {"crawlproj/pages/not_html": 1}
