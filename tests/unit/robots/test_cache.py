"""Origins and sitemaps of the robots cache (extensions/robots/cache.py)."""

from __future__ import annotations

import gzip

import pytest

from extensions.robots.cache import (
    SitemapTooLarge,
    origin_of,
    parse_sitemap,
    robots_url,
)

# --- origins ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://Example.COM/a?b", "http://example.com"),
        ("http://example.com:80/", "http://example.com"),
        ("https://example.com:443/x", "https://example.com"),
        ("https://example.com:80/x", "https://example.com:80"),
        ("http://user:pw@example.com:8080/", "http://example.com:8080"),
        ("http://[::1]:8000/x", "http://[::1]:8000"),
        ("http://bücher.example/", "http://xn--bcher-kva.example"),
        ("HTTP://example.com./", "http://example.com"),
    ],
)
def test_origin_of(url: str, origin: str) -> None:
    assert origin_of(url) == origin


def test_origin_helpers() -> None:
    with pytest.raises(ValueError):
        origin_of("/relative/path")
    assert robots_url("https://h:8443") == "https://h:8443/robots.txt"


# --- sitemaps --------------------------------------------------------------------------------

URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://h/a</loc><lastmod>2024-05-01</lastmod></url>
  <url><loc> /b </loc></url>
  <url><lastmod>2024-01-01</lastmod></url>
  <!-- a comment -->
  <url><loc>javascript:alert(1)</loc></url>
</urlset>"""
INDEX = b"""<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://h/s1.xml.gz</loc><lastmod>2024-05-01</lastmod></sitemap>
  <sitemap><loc>https://h/s2.xml</loc></sitemap>
</sitemapindex>"""


def test_sitemap_urlset() -> None:
    pages, nested = parse_sitemap(URLSET, "https://h/sitemap.xml")
    assert pages == [("https://h/a", "2024-05-01"), ("https://h/b", None)]
    assert nested == []


def test_sitemap_index() -> None:
    assert parse_sitemap(INDEX, "https://h/sitemap.xml") == (
        [],
        ["https://h/s1.xml.gz", "https://h/s2.xml"],
    )


def test_sitemap_gzip_by_magic_bytes_and_multi_member() -> None:
    body = gzip.compress(URLSET[:100]) + gzip.compress(URLSET[100:])
    assert parse_sitemap(body, "https://h/s")[0] == parse_sitemap(URLSET, "https://h/s")[0]


def test_gzip_bomb_is_refused() -> None:
    bomb = gzip.compress(b"<urlset>" + b" " * (60 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 100_000
    with pytest.raises(SitemapTooLarge):
        parse_sitemap(bomb, "https://h/s.xml.gz")
    with pytest.raises(SitemapTooLarge):
        parse_sitemap(gzip.compress(b"x" * 2000), "https://h/s", max_bytes=1000)
    with pytest.raises(SitemapTooLarge):
        parse_sitemap(b"x" * 2000, "https://h/s", max_bytes=1000)


def test_corrupt_gzip_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_sitemap(gzip.compress(b"x")[:10] + b"\xff" * 20, "https://h/s")


def test_text_sitemap() -> None:
    body = b"\xef\xbb\xbfhttps://h/a\r\n\nhttp://h/b?x=1\nnot a url\n/relative\n"
    assert parse_sitemap(body, "https://h/s.txt") == (
        [("https://h/a", None), ("http://h/b?x=1", None)],
        [],
    )


def test_xml_entities_are_not_expanded_nor_fetched(tmp_path) -> None:  # type: ignore[no-untyped-def]
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    xxe = (
        f'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file://{secret}">'
        '<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        "<urlset><url><loc>https://h/&x;&b;</loc></url></urlset>"
    ).encode()
    pages, _ = parse_sitemap(xxe, "https://h/s.xml")
    assert all("TOPSECRET" not in loc and "aaaa" not in loc for loc, _ in pages)


def test_garbage_sitemap_yields_nothing() -> None:
    assert parse_sitemap(b"<html><body>oops</body></html>", "https://h/s") == ([], [])
    assert parse_sitemap(b"", "https://h/s") == ([], [])
    assert parse_sitemap(b"<", "https://h/s") == ([], [])
