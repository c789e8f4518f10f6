"""Registered domains (domains.py) and the family a subdomain's URL shares with every
host under its domain (patterns.family_of)."""

from __future__ import annotations

import pytest

from extensions.admission.domains import registered_domain
from extensions.admission.patterns import families, url_patterns


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("w3f9a1.farm.test", "farm.test"),  # a suffix the list lacks: the last label
        ("farm.test", "farm.test"),
        ("docs.python.org", "python.org"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("foo.blogspot.com", "foo.blogspot.com"),  # the list's private section counts
        ("x.y.github.io", "y.github.io"),
        ("localhost", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]", "[::1]"),
    ],
)
def test_registered_domains(host: str, domain: str) -> None:
    assert registered_domain(host) == domain


def test_a_subdomains_url_has_a_family_across_its_domain() -> None:
    p = url_patterns("http://w3f9a1.farm.test/")
    assert families(p.family) == ["*.farm.test/"]
    q = url_patterns("http://www.shop.test/shop/shoes/?page=2")
    assert families(q.family) == ["www.shop.test/shop/<W>/?page", "*.shop.test/shop/<W>/?page"]
    # A record per directory of the domain, not per page of word slugs.
    a, b = (url_patterns(f"http://docs.py.test/library/{n}.html") for n in ("re", "os"))
    assert a.family == b.family == "docs.py.test/library/<W> *.py.test/library/<W>"


def test_the_domains_own_host_and_separate_sites_have_none() -> None:
    assert url_patterns("http://farm.test/").family == ""
    assert families(url_patterns("http://shop.test/shop/shoes/?page=2").family) == [
        "shop.test/shop/<W>/?page"
    ]
    # Two blogspot.com blogs are two registered domains: no family across them.
    assert url_patterns("http://foo.blogspot.com/").family == ""
