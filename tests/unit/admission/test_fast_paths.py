"""Admission's shortcuts answer as the general code does: the canonicalizer's plain-URL
parse, and the bounded memo tables of patterns.py (memo.py)."""

from __future__ import annotations

import itertools

from extensions.admission import patterns
from extensions.admission.canonical import _PLAIN_URL, Canonicalizer
from extensions.admission.memo import MEMO_ENTRIES, remember
from extensions.admission.patterns import family_of, path_template, url_patterns

SCHEMES = ("http://", "https://")
AUTHORITIES = (
    "h.test",
    "H.Test",
    "h.test:80",
    "h.test:443",
    "h.test:0",
    "b\u00fccher.test",
    "0x7f.1",
)
PATHS = ("/", "/a/b/../c/./d", "/A/B.PNG", "/a;jsessionid=1;v=2/b", "/x.html", "/~u/!$&'()*+,=:@")
QUERIES = ("", "?", "?b=2&a=1&utm_source=x", "?sid=1&y", "?a=/x\\y&&z", "?Q=%41")


def test_plain_urls_canonicalize_as_the_general_parse_does() -> None:
    plain = 0
    for canonicalizer in (Canonicalizer(), Canonicalizer((), ())):
        for parts in itertools.product(SCHEMES, AUTHORITIES, PATHS, QUERIES):
            url = "".join(parts)
            plain += _PLAIN_URL(url) is not None
            # A leading space fails the plain-URL match: the general parse strips it.
            assert canonicalizer.canonicalize(url) == canonicalizer.canonicalize(" " + url), url
    assert plain == 2 * len(SCHEMES) * len(AUTHORITIES) * len(PATHS) * len(QUERIES)


def test_non_plain_urls_take_the_general_parse() -> None:
    for url in (
        "HTTP://h.test/",
        "http:/h.test/",
        "http://u@h.test/",
        "http://h.test/a#f",
        "http://h.test/a b",
        "http://h%2etest/",
        "http://h.test/%7e",
        "http://[::1]/",
        "http://h.test",
    ):
        assert _PLAIN_URL(url) is None, url


def test_a_full_memo_table_is_emptied_not_grown() -> None:
    memo: dict[int, int] = {}
    for n in range(7):
        assert remember(memo, n, n * n, cap=3) == n * n
    assert memo == {6: 36}  # emptied at 3 entries (after 2, then after 5)


def test_path_templates_and_families_stay_bounded_and_right() -> None:
    first = url_patterns("http://h.test/shop/shoes/12?color=red")
    for n in range(MEMO_ENTRIES + 10):
        path_template(f"/w{n:x}z/more{n}/more{n}")  # a distinct abstracted path each
        family_of(f"h.test/s{n:x}z/x")
    assert len(patterns._TEMPLATES) <= MEMO_ENTRIES
    assert len(patterns._FAMILIES) <= MEMO_ENTRIES
    assert url_patterns("http://h.test/shop/shoes/12?color=red") == first
    assert path_template("/more/more1/more22/x") == "/more+/x"
    assert family_of("h.test/shop/shoes/?color") == "h.test/shop/<W>/?color"
