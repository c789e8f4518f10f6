"""robots.txt verdicts (RFC 9309 2.3): status rules, Retry-After, body caps, redirects, JSON."""

from __future__ import annotations

import email.utils

import pytest

from extensions.robots.rules import ROBOTS_MAX_BYTES, RobotsPolicy
from extensions.robots.verdicts import (
    ALLOW_ALL,
    DISALLOW_ALL,
    MAX_REDIRECTS,
    RULES,
    RobotsVerdict,
    decode_body,
    next_redirect,
    verdict_from_response,
)

# --- status rules (RFC 9309 2.3.1) -----------------------------------------------------------

POLICY = RobotsPolicy(cache_ttl=86400.0, error_ttl=600.0, max_error_ttl=7200.0)
NOW = 1_700_000_000.0


def verdict(status: int, body: bytes | None = b"", headers: dict[str, str] | None = None):
    return verdict_from_response(status, body, headers, NOW, POLICY, "crawlproj")


@pytest.mark.parametrize(
    ("status", "kind", "ttl"),
    [
        (200, RULES, 86400.0),
        (204, RULES, 86400.0),
        (301, ALLOW_ALL, 86400.0),  # a chain past MAX_REDIRECTS: "unavailable"
        (400, ALLOW_ALL, 86400.0),
        (401, ALLOW_ALL, 86400.0),
        (403, ALLOW_ALL, 86400.0),
        (404, ALLOW_ALL, 86400.0),
        (410, ALLOW_ALL, 86400.0),
        (429, DISALLOW_ALL, 600.0),
        (500, DISALLOW_ALL, 600.0),
        (503, DISALLOW_ALL, 600.0),
        (0, DISALLOW_ALL, 600.0),
        (999, DISALLOW_ALL, 600.0),
    ],
)
def test_status_rules(status: int, kind: str, ttl: float) -> None:
    v = verdict(status, b"User-agent: *\nDisallow: /private\n")
    assert (v.kind, v.status, v.fetched_at, v.expires_at) == (kind, status, NOW, NOW + ttl)
    assert v.allows("http://h/robots.txt", "crawlproj")  # RFC 9309 2.2.2, whatever the kind
    if kind == RULES:
        assert not v.allows("http://h/private/x", "crawlproj")
        assert v.allows("http://h/public", "crawlproj")
    else:
        assert v.body == "" and v.allows("http://h/private/x", "crawlproj") is (kind == ALLOW_ALL)


@pytest.mark.parametrize(
    ("status", "retry_after", "ttl"),
    [
        (503, "120", 120.0),
        (429, "3600", 3600.0),
        (500, "1000000", 7200.0),  # capped at max_error_ttl
        (503, "0", 30.0),  # floored: no robots.txt fetch loop
        (503, email.utils.formatdate(NOW + 900, usegmt=True), 900.0),
        (503, email.utils.formatdate(NOW - 900, usegmt=True), 30.0),
        (503, "soon", 600.0),  # unreadable: the default error TTL
        (0, "120", 600.0),  # no response, no header to honour
    ],
)
def test_retry_after(status: int, retry_after: str, ttl: float) -> None:
    v = verdict(status, b"", {"Retry-After": retry_after})
    assert v.kind == DISALLOW_ALL
    assert v.expires_at - NOW == pytest.approx(ttl)


def test_retry_after_header_name_is_case_insensitive() -> None:
    assert verdict(503, b"", {"retry-after": "60"}).expires_at == NOW + 60


def test_200_body_decoding_and_caps() -> None:
    assert verdict(200, None).kind == RULES and verdict(200, None).allows("http://h/a", "x")
    bad_utf8 = b"User-agent: *\nDisallow: /\xff\xfe\nDisallow: /x\n"
    assert not verdict(200, bad_utf8).allows("http://h/x", "crawlproj")
    html = b"<!doctype html><html><body>Disallow nothing here</body></html>"
    assert verdict(200, html).allows("http://h/anything", "crawlproj")
    v = verdict(200, b"User-agent: *\nCrawl-delay: 3\nSitemap: https://h/s.xml\n")
    assert (v.crawl_delay, v.sitemaps) == (3.0, ("https://h/s.xml",))


def test_oversized_body_is_cut_at_a_line_end() -> None:
    head = b"User-agent: *\nDisallow: /a\n"
    filler = b"#" * 99 + b"\n"
    body = head + filler * ((ROBOTS_MAX_BYTES - len(head)) // len(filler))
    body += b"#" * (ROBOTS_MAX_BYTES - len(body) - 11) + b"\n"
    body += b"Allow: /public-but-not-a\n"  # the limit falls right after "Allow: /pu"
    assert body[:ROBOTS_MAX_BYTES].endswith(b"\nAllow: /pu")
    text = decode_body(body, ROBOTS_MAX_BYTES)
    assert len(text.encode()) <= ROBOTS_MAX_BYTES and text.endswith("\n")
    assert "Allow: /pu" not in text  # a cut line could allow more than it says
    assert not verdict(200, body).allows("http://h/a", "crawlproj")


def test_redirect_helper() -> None:
    assert MAX_REDIRECTS == 5
    url = "http://h/robots.txt"
    assert next_redirect(url, 301, {"Location": "/r.txt"}) == "http://h/r.txt"
    assert next_redirect(url, 308, {"location": "https://o/robots.txt"}) == "https://o/robots.txt"
    assert next_redirect(url, 302, {}) is None
    assert next_redirect(url, 200, {"Location": "/x"}) is None


# --- JSON ------------------------------------------------------------------------------------


def test_verdict_json_round_trip() -> None:
    v = verdict(200, b"User-agent: *\nDisallow: /\xc3\xa4\nCrawl-delay: 2\nSitemap: https://h/s\n")
    assert v.allows("http://h/b", "crawlproj")  # fills the matcher cache, not serialised
    back = RobotsVerdict.from_json(v.to_json())
    assert back == v and back.sitemaps == ("https://h/s",) and back.crawl_delay == 2.0
    assert not back.allows("http://h/ä", "crawlproj")
    for status in (404, 503, 0):
        assert RobotsVerdict.from_json(verdict(status).to_json()) == verdict(status)
    with pytest.raises(ValueError):
        RobotsVerdict.from_json('{"kind": "rules"}')
    with pytest.raises(ValueError):
        RobotsVerdict.from_json(v.to_json().replace('"rules"', '"maybe"'))
