"""Links: a hostile href is skipped and counted; it never raises or costs the other links."""

from __future__ import annotations

from collections import Counter

import pytest
import scrapy
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.http import HtmlResponse

from crawlproj.links import HREF_MAX_CHARS, SkippedLink, extract_links, resolve_href
from crawlproj.links import _resolve as join_and_check

BASE = "http://site.test/dir/page.html"

# href -> the stats suffix it is counted under.
HOSTILE = {
    "javascript:void(0)": "scheme",
    "mailto:someone@site.test": "scheme",
    "tel:+15550100": "scheme",
    "data:text/html,<b>hi</b>": "scheme",
    "ftp://files.site.test/x": "scheme",
    "http://[::1": "unparsable",
    "http://a b/": "unparsable",
    "http://site.test:99999/": "unparsable",
    "http://bad\x01host.test/": "unparsable",
    "http://:80/": "unparsable",
    "http://site.test/" + "a" * 100_000: "too_long",
}


class Stats:
    def __init__(self) -> None:
        self.values: Counter[str] = Counter()

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] += count


def page(*hrefs: str, head: str = "") -> HtmlResponse:
    anchors = "".join(f'<a href="{h}">x</a>' for h in hrefs)
    body = f"<html><head>{head}</head><body>{anchors}</body></html>"
    return HtmlResponse(BASE, body=body.encode("utf-8"), encoding="utf-8")


def test_hostile_hrefs_between_normal_links_cost_no_normal_link() -> None:
    normal = ["/a", "b.html", "https://other.test/c?q=1", "//cdn.test/d", "/e#frag"]
    hrefs: list[str] = []
    for good, bad in zip(normal, list(HOSTILE)[: len(normal)], strict=True):
        hrefs += [bad, good]
    hrefs += list(HOSTILE)[len(normal) :]
    stats = Stats()
    links = extract_links(page(*hrefs), stats)
    assert links == [
        "http://site.test/a",
        "http://site.test/dir/b.html",
        "https://other.test/c?q=1",
        "http://cdn.test/d",
        "http://site.test/e",  # the fragment names a place in the page, not a page
    ]
    for url in links:
        scrapy.Request(url)
    expected = Counter(f"crawlproj/links/skipped/{reason}" for reason in HOSTILE.values())
    assert stats.values == expected


def test_stats_are_optional_and_in_page_links_are_not_counted() -> None:
    stats = Stats()
    response = page("", "#top", "mailto:x@site.test", "/a", "/a")
    assert extract_links(response, stats) == ["http://site.test/a"]
    assert extract_links(response) == ["http://site.test/a"]
    assert stats.values == Counter({"crawlproj/links/skipped/scheme": 1})


@pytest.mark.parametrize(
    ("href", "reason"),
    [
        ("http://site.test/\ud800", "unparsable"),  # a lone surrogate
        ("\udcff", "unparsable"),
        ("http://a.test/" + "x" * HREF_MAX_CHARS, "too_long"),
        ("about:blank", "scheme"),
    ],
)
def test_resolve_href_names_the_reason(href: str, reason: str) -> None:
    with pytest.raises(SkippedLink) as raised:
        resolve_href(BASE, href)
    assert raised.value.reason == reason


def test_a_bad_base_href_falls_back_to_the_page_url() -> None:
    for base in ("http://[::1/", "http://site.test:99999/", "//a b/"):
        assert extract_links(page("x", head=f'<base href="{base}">')) == ["http://site.test/dir/x"]
    assert extract_links(page("x", head='<base href="http://b.test/y/">')) == ["http://b.test/y/x"]


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_as_href_never_raise(raw: bytes) -> None:
    # surrogateescape turns undecodable bytes into lone surrogates, the worst str input.
    for href in (raw.decode("utf-8", "surrogateescape"), "http://" + raw.decode("latin-1")):
        try:
            url = resolve_href(BASE, href)
        except SkippedLink:
            continue
        if url:
            scrapy.Request(url)


# Starts that steer random bytes into the host, the port and the IPv6 literal.
PREFIXES = st.sampled_from([b"", b"http://", b"//", b"http://[", b"http://a.test:", b"mailto:"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(PREFIXES, st.binary(max_size=32)), max_size=5))
def test_random_bytes_in_a_page_never_raise(parts: list[tuple[bytes, bytes]]) -> None:
    raws = [prefix + raw for prefix, raw in parts]
    anchors = b"".join(b'<a href="' + raw + b'">x</a><a href="/ok">y</a>' for raw in raws)
    response = HtmlResponse(BASE, body=b"<html><body>" + anchors + b"</body></html>")
    links = extract_links(response, Stats())
    for url in links:
        scrapy.Request(url)
    if raws and all(b'"' not in raw and b">" not in raw for raw in raws):
        assert "http://site.test/ok" in links


def _joined(base: str, href: str) -> str:
    """The plain rule the folder cache must agree with: urljoin, then the checks."""
    try:
        return join_and_check(base, href.strip().partition("#")[0])
    except SkippedLink as skipped:
        return f"skip {skipped.reason}"


HREF_PARTS = st.sampled_from(
    ["", ".", "..", "/", "//", "a", "b.html", "?q=1", "?", ";p", ";", "#f", ":", "x:y", "%2F", " "]
)
BASES = st.sampled_from(
    [
        "http://site.test",
        "http://site.test/",
        "http://site.test/dir/page.html",
        "http://site.test/dir/sub/?q=/x/y#f/g",
        "https://site.test/a;p/b;q?r",
        "http://site.test/dir/page.html#top/x",
        "http://u@site.test:8080/a/b/",
    ]
)


@settings(max_examples=2000)
@given(
    BASES, st.lists(HREF_PARTS, max_size=5), st.sampled_from(["", "http:", "https:", "//h.test"])
)
def test_a_cached_resolution_is_the_join_of_the_whole_base(
    base: str, parts: list[str], start: str
) -> None:
    """An href resolved from its base's folder (cached) joins as from the whole base."""
    href = start + "".join(parts)
    for _ in range(2):  # the second answer comes from the cache
        try:
            got = resolve_href(base, href) or _joined(base, "")
        except SkippedLink as skipped:
            got = f"skip {skipped.reason}"
        assert got == (_joined(base, href) if href.strip().partition("#")[0] else _joined(base, ""))
