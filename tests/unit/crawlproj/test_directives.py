"""Page directives: meta robots, X-Robots-Tag (user-agent scoped) and rel=canonical."""

from __future__ import annotations

import pytest
from scrapy.http import HtmlResponse, Request, TextResponse

from crawlproj.directives import PageDirectives, declares_variant, header_words, page_directives

URL = "http://site.test/dir/page.html"


def html(head: str = "", headers: dict[str, str | list[str]] | None = None) -> HtmlResponse:
    body = f"<html><head>{head}</head><body><a href='/x'>x</a></body></html>"
    return HtmlResponse(URL, body=body.encode(), headers=headers or {}, encoding="utf-8")


@pytest.mark.parametrize(
    ("head", "headers", "expected"),
    [
        ("", None, PageDirectives()),
        ('<meta name="robots" content="noindex">', None, PageDirectives(noindex=True)),
        ('<meta name="ROBOTS" content="NoFollow, index">', None, PageDirectives(nofollow=True)),
        ('<meta name="robots" content="none">', None, PageDirectives(True, True)),
        ('<meta name="crawlproj" content="nofollow">', None, PageDirectives(nofollow=True)),
        ('<meta name="googlebot" content="noindex">', None, PageDirectives()),
        ("", {"X-Robots-Tag": "noindex, nofollow"}, PageDirectives(True, True)),
        ("", {"X-Robots-Tag": "googlebot: noindex"}, PageDirectives()),
        ("", {"X-Robots-Tag": "crawlproj: nofollow"}, PageDirectives(nofollow=True)),
        ("", {"X-Robots-Tag": ["otherbot: none", "noindex"]}, PageDirectives(noindex=True)),
        ("", {"X-Robots-Tag": "unavailable_after: 25 Jun 2010 15:00:00 PST"}, PageDirectives()),
        (
            '<link rel="canonical" href="../other.html">',
            None,
            PageDirectives(canonical="http://site.test/other.html"),
        ),
        (
            '<link rel="Canonical" href="https://site.test/c">',
            None,
            PageDirectives(canonical="https://site.test/c"),
        ),
        (
            "",
            {"Link": '<https://site.test/pdf-canonical>; rel="canonical"'},
            PageDirectives(canonical="https://site.test/pdf-canonical"),
        ),
    ],
)
def test_page_directives(head: str, headers: dict | None, expected: PageDirectives) -> None:
    assert page_directives(html(head, headers), "crawlproj") == expected


def test_header_scope_is_not_mistaken_for_a_directive_with_a_value() -> None:
    assert header_words("max-snippet: 20, noindex", "crawlproj") == ["max-snippet", "noindex"]
    assert header_words("CrawlProj: noindex", "crawlproj") == ["noindex"]


def test_non_html_responses_use_headers_only() -> None:
    response = TextResponse(
        URL, body=b"%PDF", headers={"X-Robots-Tag": "noindex"}, request=Request(URL)
    )
    assert page_directives(response, "crawlproj").noindex is True


@pytest.mark.parametrize("body", [b'{"a": 1}', b"", b"[1, 2"])
def test_a_json_response_has_header_directives_and_no_error(body: bytes) -> None:
    """parsel types a JSON body's selector "json" and refuses XPath on it: a manual's
    index.json (cut at its headers) raised in the spider and lost its row."""
    headers = {"Content-Type": "application/json", "X-Robots-Tag": "nofollow"}
    response = TextResponse(URL, body=body, headers=headers, request=Request(URL))
    found = page_directives(response, "crawlproj")
    assert (found.noindex, found.nofollow, found.canonical) == (False, True, None)


def test_a_bad_base_href_costs_neither_the_directives_nor_the_links() -> None:
    """w3lib raises on an unparsable <base href>; the page is read against its own URL."""
    from crawlproj.spiders.page_parse import follow_links, parse_page

    head = (
        '<base href="http://[::1"><link rel="canonical" href="/c">'
        '<meta name="robots" content="noindex">'
    )
    response = HtmlResponse(
        "http://h.test/p",
        body=f"<html><head>{head}</head><body><a href='/a'>a</a></body></html>".encode(),
        request=Request("http://h.test/p"),
    )
    assert page_directives(response, "crawlproj") == PageDirectives(True, False, "http://h.test/c")
    page = parse_page(response, "crawlproj")
    assert follow_links(page, response) == ["http://h.test/a"]


S = "http://s.test"


@pytest.mark.parametrize(
    ("url", "declared", "variant"),
    [
        # the same path with parameters added: a filter, sort, session or tracking one
        (f"{S}/shop/shoes/?color=red", f"{S}/shop/shoes/", True),
        (f"{S}/shop/shoes/?page=2&color=red", f"{S}/shop/shoes/?page=2", True),
        (f"{S}/a?ref=side0&id=3", f"{S}/a?id=3", True),
        (f"{S}/a?tone=warm&fit=slim", f"{S}/a?fit=slim", True),
        # ... but not when they only page the listing, or the declared one is not a subset
        (f"{S}/shop/shoes/?page=2", f"{S}/shop/shoes/", False),
        (f"{S}/list?start=20&p=3", f"{S}/list", False),
        (f"{S}/a?id=4", f"{S}/a?id=3", False),
        # a number naming the document: a template whose canonical drops the id
        (f"{S}/article.php?id=7", f"{S}/article.php", False),
        (f"{S}/shop/?size=42", f"{S}/shop/", True),  # a number under a filter name
        # filter segments after the listing's path, after at most one marker segment
        (f"{S}/shop/shoes/f/color-red/", f"{S}/shop/shoes/", True),
        (f"{S}/shop/shoes/f/color-red/size-m/", f"{S}/shop/shoes/f/color-red/", True),
        (f"{S}/shop/shoes/color-red/", f"{S}/shop/shoes/", True),
        (f"{S}/shop/shoes/f/color-red/", f"{S}/shop/", False),
        (f"{S}/shop/shoes/f/page-2/", f"{S}/shop/shoes/", False),
        (f"{S}/blog/page/2/", f"{S}/blog/", False),
        # itself, its own other spelling, the root from a path, another host or version
        (f"{S}/x.html", f"{S}/x.html", False),
        (f"{S}/x.html?utm_source=a", f"{S}/x.html", False),
        (f"{S}/docs/page5", f"{S}/", False),
        (f"{S}/x.html", "https://docs.example.org/x.html", False),
        (f"{S}/en/latest/x.html", f"{S}/en/stable/x.html", False),
        (f"{S}/x.html", None, False),
        (f"{S}/x.html", "javascript:void(0)", False),
    ],
)
def test_a_declared_canonical_names_the_page_it_is_a_variant_of(
    url: str, declared: str | None, variant: bool
) -> None:
    assert declares_variant(url, declared) is variant
