"""Tests for extensions.admission.canonical (canonicalization) and extensions.admission.filters."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extensions.admission.canonical import (
    DEFAULT_SESSION_PARAMS,
    DEFAULT_TRACKING_PARAMS,
    Canonicalizer,
    base_href,
    canonicalize,
)
from extensions.admission.filters import UrlFilter, compile_block_rules, host_of

PAGE = "http://example.com/dir/page.html?x=1"

CASES: list[tuple[str, str | None, str | None]] = [
    # scheme and host case, trailing dot, default ports
    ("HTTP://Example.COM/", None, "http://example.com/"),
    ("https://WWW.Example.com./a", None, "https://www.example.com/a"),
    ("http://example.com:80/a", None, "http://example.com/a"),
    ("https://example.com:443/a", None, "https://example.com/a"),
    ("http://example.com:443/a", None, "http://example.com:443/a"),
    ("https://example.com:8443/a", None, "https://example.com:8443/a"),
    ("http://example.com:0080/", None, "http://example.com/"),
    ("http://example.com:/a", None, "http://example.com/a"),
    # empty path, lone "?", fragments
    ("http://example.com", None, "http://example.com/"),
    ("http://example.com?", None, "http://example.com/"),
    ("http://example.com?a=1", None, "http://example.com/?a=1"),
    ("http://example.com/a?&&", None, "http://example.com/a"),
    ("http://example.com/a#frag", None, "http://example.com/a"),
    ("#top", PAGE, "http://example.com/dir/page.html?x=1"),
    ("", PAGE, "http://example.com/dir/page.html?x=1"),
    ("?y=2", PAGE, "http://example.com/dir/page.html?y=2"),
    ("?", PAGE, "http://example.com/dir/page.html"),
    # relative resolution, dot segments
    ("other.html", PAGE, "http://example.com/dir/other.html"),
    ("./other.html", PAGE, "http://example.com/dir/other.html"),
    ("../up.html", PAGE, "http://example.com/up.html"),
    ("../../../../up.html", PAGE, "http://example.com/up.html"),
    ("/abs", PAGE, "http://example.com/abs"),
    ("http://example.com/a/./b/../c", None, "http://example.com/a/c"),
    ("http://example.com/a/b/..", None, "http://example.com/a/"),
    ("http://example.com/a/%2E%2e/b", None, "http://example.com/b"),
    ("http://example.com/..", None, "http://example.com/"),
    ("sub/", "http://example.com/a/b/../c", "http://example.com/a/sub/"),
    ("http:rel", PAGE, "http://example.com/dir/rel"),
    ("http:example.org/x", None, "http://example.org/x"),
    ("https:///example.org/x", None, "https://example.org/x"),
    ("rel", None, None),
    # protocol-relative and backslashes
    ("//cdn.example.org/x.js", "https://example.com/", "https://cdn.example.org/x.js"),
    ("//cdn.example.org", "http://example.com/", "http://cdn.example.org/"),
    ("//cdn.example.org/x", None, None),
    ("http:\\\\example.com\\a\\b", None, "http://example.com/a/b"),
    ("\\\\cdn.example.org\\x", "https://example.com/", "https://cdn.example.org/x"),
    ("..\\up", PAGE, "http://example.com/up"),
    ("http://example.com/a?q=\\", None, "http://example.com/a?q=%5C"),
    # non-http schemes
    ("javascript:void(0)", PAGE, None),
    ("JavaScript:alert(1)", PAGE, None),
    ("mailto:someone@example.com", PAGE, None),
    ("data:text/html,hi", PAGE, None),
    ("ftp://example.com/file", None, None),
    ("tel:+1234", PAGE, None),
    ("  http://example.com/a  \n", None, "http://example.com/a"),
    ("http://exa\nmple.com/a\tb", None, "http://example.com/ab"),
    # userinfo
    ("http://user:pass@example.com/", None, "http://example.com/"),
    ("http://user@Example.com:8080/a", None, "http://example.com:8080/a"),
    ("http://a@b@example.com/", None, "http://example.com/"),
    # IDN, IPv4, IPv6
    ("http://bücher.de/", None, "http://xn--bcher-kva.de/"),
    ("http://BÜCHER.de/x", None, "http://xn--bcher-kva.de/x"),
    ("http://xn--BCHER-kva.de/", None, "http://xn--bcher-kva.de/"),
    ("http://%65xample.com/", None, "http://example.com/"),
    ("http://192.168.0.1:8080/", None, "http://192.168.0.1:8080/"),
    ("http://0x7f.1/", None, "http://127.0.0.1/"),
    ("http://1.2.3.256/", None, None),
    ("http://[2001:DB8::1]/", None, "http://[2001:db8::1]/"),
    ("http://[2001:db8:0:0:0:0:0:1]:8080/a", None, "http://[2001:db8::1]:8080/a"),
    ("https://[::1]:443/", None, "https://[::1]/"),
    ("http://[::1/", None, None),
    ("http://[fe80::1%25eth0]/", None, None),
    ("http://[not:an:ip]/", None, None),
    # invalid hosts and ports
    ("http://example.com:99999/", None, None),
    ("http://example.com:0/", None, None),
    ("http://example.com:8a/", None, None),
    ("http://example.com:1:2/", None, None),
    ("http:///a", None, "http://a/"),
    ("http:///", None, None),
    ("http://", None, None),
    ("http://user@/a", None, None),
    ("http://exa mple.com/", None, None),
    ("http://a..b/", None, None),
    # percent-encoding
    ("http://example.com/%7e%7Euser", None, "http://example.com/~~user"),
    ("http://example.com/%41%62", None, "http://example.com/Ab"),
    ("http://example.com/a%2fb%2F", None, "http://example.com/a%2Fb%2F"),
    ("http://example.com/%e2%82%ac?q=%e2%82%ac", None, "http://example.com/%E2%82%AC?q=%E2%82%AC"),
    ("http://example.com/a b", None, "http://example.com/a%20b"),
    ("http://example.com/€/ü", None, "http://example.com/%E2%82%AC/%C3%BC"),
    ("http://example.com/?q=a b&r=ü", None, "http://example.com/?q=a%20b&r=%C3%BC"),
    ("http://example.com/100%/%zz", None, "http://example.com/100%25/%25zz"),
    ("http://example.com/a+b?q=a+b%2B", None, "http://example.com/a+b?q=a+b%2B"),
    ('http://example.com/"<>{}', None, "http://example.com/%22%3C%3E%7B%7D"),
    # case preserved in path and query
    (
        "http://EXAMPLE.com/Path/File.HTML?Key=Value",
        None,
        "http://example.com/Path/File.HTML?Key=Value",
    ),
    # query: sort, repeated keys, blank values
    ("http://example.com/?b=2&a=1", None, "http://example.com/?a=1&b=2"),
    ("http://example.com/?a=2&b=1&a=1", None, "http://example.com/?a=1&a=2&b=1"),
    ("http://example.com/?b=1&a=", None, "http://example.com/?a=&b=1"),
    ("http://example.com/?b&a", None, "http://example.com/?a&b"),
    ("http://example.com/?a=x=y", None, "http://example.com/?a=x=y"),
    ("http://example.com/?B=1&a=1", None, "http://example.com/?B=1&a=1"),
    # tracking and session parameters
    ("http://example.com/?utm_source=x&UTM_Medium=y&id=3", None, "http://example.com/?id=3"),
    ("http://example.com/?fbclid=abc", None, "http://example.com/"),
    (
        "http://example.com/a?gbraid=1&wbraid=2&_gl=3&ttclid=4&igshid=5&srsltid=6&_hsenc=7&mkt_tok=8&ref=x",
        None,
        "http://example.com/a?ref=x",
    ),
    (
        "http://example.com/?gclid=1&dclid=2&msclkid=3&yclid=4&_ga=5&mc_cid=6&mc_eid=7&k=v",
        None,
        "http://example.com/?k=v",
    ),
    ("http://example.com/?PhPsEsSiD=deadbeef&page=2", None, "http://example.com/?page=2"),
    (
        "http://example.com/?sid=1&sessionid=2&JSESSIONID=3&ASPSESSIONIDQQGG=4",
        None,
        "http://example.com/",
    ),
    ("http://example.com/?utm=1&xutm_source=2", None, "http://example.com/?utm=1&xutm_source=2"),
    ("http://example.com/?utm%5Fsource=1", None, "http://example.com/"),
    ("http://example.com/cart;jsessionid=ABC123?x=1", None, "http://example.com/cart?x=1"),
    ("http://example.com/a;JSESSIONID=ABC/b;v=1", None, "http://example.com/a/b;v=1"),
    ("http://example.com/a;x=1;jsessionid=Z;y=2", None, "http://example.com/a;x=1;y=2"),
    ("http://example.com/a/..;jsessionid=1/b", None, "http://example.com/b"),
    # ASP.NET's cookieless state in the path: session, detection flag, anonymous id, ticket
    ("http://example.com/(S(lit3py55t21z5v55vlm25s55))/a.aspx", None, "http://example.com/a.aspx"),
    ("http://example.com/app/(X(1)S(x1y2))/b.aspx?q=1", None, "http://example.com/app/b.aspx?q=1"),
    ("http://example.com/(A(aB-_9)S(s0)F(f!*.))/c", None, "http://example.com/c"),
    ("http://example.com/(S(abc))", None, "http://example.com/"),
    ("page2.aspx", "http://example.com/(S(abc))/page1.aspx", "http://example.com/page2.aspx"),
    # parentheses that are not that state stay
    ("http://example.com/w/Set_(maths)", None, "http://example.com/w/Set_(maths)"),
    ("http://example.com/(S(abc))x/", None, "http://example.com/(S(abc))x/"),
    ("http://example.com/(draft)/a", None, "http://example.com/(draft)/a"),
]


@pytest.mark.parametrize(("url", "base", "expected"), CASES)
def test_canonicalize(url: str, base: str | None, expected: str | None) -> None:
    assert canonicalize(url, base) == expected


def test_case_count() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(("url", "base", "expected"), CASES)
def test_canonical_output_is_fixed_point(url: str, base: str | None, expected: str | None) -> None:
    if expected is not None:
        assert canonicalize(expected) == expected


def test_custom_param_lists() -> None:
    url = "http://example.com/a;jsessionid=1?utm_source=x&ref=y&sid=2"
    keep_all = Canonicalizer(tracking_params=(), session_params=())
    assert (
        keep_all.canonicalize(url) == "http://example.com/a;jsessionid=1?ref=y&sid=2&utm_source=x"
    )
    only_ref = Canonicalizer(tracking_params=["REF"], session_params=[])
    assert only_ref(url) == "http://example.com/a;jsessionid=1?sid=2&utm_source=x"
    assert canonicalize(url, tracking_params=["ref"]) == "http://example.com/a?utm_source=x"
    assert "utm_*" in DEFAULT_TRACKING_PARAMS
    assert "jsessionid" in DEFAULT_SESSION_PARAMS
    # No session parameters: ASP.NET's path state stays too.
    assert keep_all("http://example.com/(S(abc))/a") == "http://example.com/(S(abc))/a"


def test_bad_base() -> None:
    assert canonicalize("a.html", "javascript:void(0)") is None
    assert canonicalize("a.html", "/relative/base") is None
    assert canonicalize("http://example.com/x", "not a url") == "http://example.com/x"


@pytest.mark.parametrize(
    ("html_base", "page", "expected"),
    [
        (None, PAGE, PAGE),
        ("   ", PAGE, PAGE),
        ("http://cdn.example.org/root/", PAGE, "http://cdn.example.org/root/"),
        ("/other/", PAGE, "http://example.com/other/"),
        ("../", PAGE, "http://example.com/"),
        ("javascript:void(0)", PAGE, PAGE),
    ],
)
def test_base_href(html_base: str | None, page: str, expected: str) -> None:
    assert base_href(html_base, page) == expected


def test_base_href_used_for_resolution() -> None:
    base = base_href("sub/", "http://example.com/a/page")
    assert canonicalize("x.html", base) == "http://example.com/a/sub/x.html"


# --- filters -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "depth", "reason"),
    [
        ("http://example.com/a", 0, None),
        ("https://example.com/a?x=1", 16, None),
        ("ftp://example.com/a", 0, "scheme"),
        ("mailto:x@example.com", 0, "scheme"),
        ("/relative", 0, "scheme"),
        ("http://example.com/" + "a" * 1000, 0, "length"),
        ("http://example.com/a", 17, "depth"),
        ("http://example.com/?" + "&".join(f"p{i}=1" for i in range(17)), 0, "query_params"),
        ("http://example.com/?" + "&".join(f"p{i}=1" for i in range(16)), 0, None),
        ("http://example.com/a/b/a/b/a/b/a/b", 0, "repeated_segments"),
        ("http://example.com/trap/a/a/a/a", 0, "repeated_segments"),
        ("http://example.com/trap/a/a/a", 0, None),
        ("http://example.com/a/b/c/d/e/f/g", 0, None),
        # A segment's stem with a growing counter: a path that grows per hop.
        ("http://example.com/docs/v1/more/more2/more3/more4/", 0, "repeated_segments"),
        ("http://example.com/docs/v1/more/more2/more3/", 0, None),
        ("http://example.com/gallery/p1/p2/p3/p4", 0, "repeated_segments"),
        ("http://example.com/1/2/3/4/5", 0, None),  # bare numbers have no stem
        ("http://example.com/2024/05/17/05/", 0, None),
    ],
)
def test_url_filter_defaults(url: str, depth: int, reason: str | None) -> None:
    assert UrlFilter().check(url, depth) == reason


def test_url_filter_configured() -> None:
    url_filter = UrlFilter(
        allowed_schemes=["https"],
        max_url_length=30,
        max_depth=None,
        max_query_params=1,
        max_repeated_segments=None,
    )
    assert url_filter.check("http://example.com/", 0) == "scheme"
    assert url_filter.check("https://example.com/" + "x" * 20, 0) == "length"
    assert url_filter.check("https://e.com/", 1000) is None
    assert url_filter.check("https://e.com/?a=1&b=2", 0) == "query_params"
    assert url_filter.check("https://e.com/a/a/a/a/a", 0) is None


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://Example.COM:8080/x", "example.com"),
        ("https://user:pw@example.com./", "example.com"),
        ("http://[2001:db8::1]:8080/", "[2001:db8::1]"),
        ("http://example.com?x", "example.com"),
        ("/relative", ""),
    ],
)
def test_host_of(url: str, host: str) -> None:
    assert host_of(url) == host


def test_block_rules() -> None:
    rules = compile_block_rules(
        [
            "# comment",
            "",
            "host:example.com",
            "re:^https?://[^/]+/private/",
            "*.example.org/*",
            "host:bücher.de",
        ]
    )
    assert len(rules) == 4
    assert rules.match("http://example.com/") == "host:example.com"
    assert rules.match("https://a.b.example.com/x") == "host:example.com"
    assert rules.match("http://notexample.com/") is None
    assert rules.match("http://other.net/private/x") == "re:^https?://[^/]+/private/"
    assert rules.match("http://other.net/public/private/") is None
    assert rules.match("https://www.example.org/page") == "*.example.org/*"
    assert rules.match("http://example.org/page") is None
    assert rules.match("http://evil.net/x.example.org/y") is None
    assert rules.match("http://xn--bcher-kva.de/") == "host:bücher.de"


def test_block_rule_glob_with_scheme() -> None:
    rules = compile_block_rules(["http://*.example.org/*"])
    assert rules.match("http://a.example.org/x") == "http://*.example.org/*"
    assert rules.match("https://a.example.org/x") is None


def test_block_rules_invalid_regex_names_line() -> None:
    with pytest.raises(ValueError, match=r"re:\(unclosed"):
        compile_block_rules(["host:ok.com", "re:(unclosed"])


def test_block_rules_empty_host() -> None:
    with pytest.raises(ValueError, match="host:"):
        compile_block_rules(["host:  "])


# --- property tests ----------------------------------------------------------------------

_CHARS = st.sampled_from(
    [*"aZ09-._~!$&'()*+,;=:@/?#%[]\\ \"<>^`{|}\t", "é", "€", "%2e", "%7E", "%2f", "..", "."]
)
_TEXT = st.lists(_CHARS, max_size=12).map("".join)
_HOSTS = st.sampled_from(
    [
        "example.com",
        "EXAMPLE.com.",
        "bücher.de",
        "[2001:DB8::1]",
        "[::1]",
        "127.0.0.1",
        "0x7f.1",
        "user:pw@host.org",
        "h%41st.net",
        "a_b.example",
    ]
)
_PORTS = st.sampled_from(["", ":", ":80", ":443", ":8080", ":0", ":x"])


@st.composite
def _http_urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "hTTps"]))
    path = "/".join(draw(st.lists(_TEXT, max_size=5)))
    query = "&".join(f"{k}={v}" for k, v in draw(st.lists(st.tuples(_TEXT, _TEXT), max_size=4)))
    return f"{scheme}://{draw(_HOSTS)}{draw(_PORTS)}/{path}?{query}#{draw(_TEXT)}"


@settings(max_examples=500)
@given(_http_urls())
def test_canonicalize_idempotent(url: str) -> None:
    once = canonicalize(url)
    if once is not None:
        assert canonicalize(once) == once


@settings(max_examples=300)
@given(st.text(max_size=40), _http_urls())
def test_canonicalize_idempotent_any_text(text: str, base: str) -> None:
    for url in (text, "http://example.com/" + text):
        once = canonicalize(url, base)
        if once is not None:
            assert once.isascii()
            assert canonicalize(once) == once
