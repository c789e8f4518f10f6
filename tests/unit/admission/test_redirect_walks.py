"""Redirect walks (admission/redirect_walks.py): which redirect chains keep landing on new
URLs of their own shape, the hop admission refuses, and the short tokens the URL
patterns now read as one shape (<T>)."""

from __future__ import annotations

import pytest
from scrapy import Request

from extensions.admission.admit import Rejected
from extensions.admission.patterns import url_patterns
from extensions.admission.redirect_walks import CHAIN_META, in_shape, walks_in_place
from tests.unit.admission.golden_admission import GoldenSpider, admission

H = "http://h.test"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("/go/5e0c2a9b7d41f386", "/go/0f1e2d3c4b5a6978"),  # long hex tokens
        ("/jump/0b7e95c3d2a1", "/jump/9a1c33e0b2f4"),  # short hex tokens
        ("/watch/dQw4w9WgXcQ", "/watch/a8Kx2mQ0zPb"),  # base62 ids
        ("/hop/7", "/hop/8"),  # a counter
        ("/out?u=a41f07c2e9b3", "/out?u=b5"),  # a query value
        ("/moved/river-fern", "/moved/ember-oak"),  # slugs: one family
    ],
)
def test_a_chains_urls_of_one_shape(a: str, b: str) -> None:
    assert in_shape(H + b, [H + a]) == 1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("/old", "/old/"),  # a trailing slash
        ("/old", "https://h.test/old"),  # http to https
        ("/old", "http://www.h.test/old"),  # www.
        ("/go/aa11bb22cc33", "/new/page"),  # another shape
    ],
)
def test_a_canonicalizing_hop_or_another_shape_is_not_in_shape(a: str, b: str) -> None:
    assert in_shape(b if b.startswith("http") else H + b, [H + a]) == 0


def test_a_single_moved_page_is_no_walk_a_second_hop_in_shape_is() -> None:
    v1, v2, v3 = (f"{H}/docs/v{n}/install" for n in (1, 2, 3))
    assert not walks_in_place(v1, v2, [])  # moved once, from a link
    assert walks_in_place(v2, v3, [v1])  # reached in shape, and on again
    assert not walks_in_place(v2, f"{H}/docs/install", [v1])  # then out of its shape


def test_a_bounce_between_two_shapes_walks() -> None:
    chain = [f"{H}/jump/0b7e95c3d2a1", f"{H}/land?from=0b7e95c3d2a1"]
    assert walks_in_place(f"{H}/jump/ffe1d03c29ab", f"{H}/land?from=ffe1d03c29ab", chain)


def test_admission_refuses_a_chains_third_hop_of_one_shape() -> None:
    adm, spider = admission(), GoldenSpider()
    hops = [f"http://h.test/go/{n:02d}a{n:02d}b{n:02d}" for n in range(1, 5)]

    def admit(url: str, chain: list[str]) -> None:
        adm.item(Request(url, meta={CHAIN_META: chain}), spider)

    admit(hops[1], hops[:1])
    admit(hops[2], hops[:2])  # a page moved twice still arrives
    with pytest.raises(Rejected, match="redirect_walk"):
        admit(hops[3], hops[:3])
    admit("http://h.test/landing", hops[:3])  # a chain that leaves its shape goes on


@pytest.mark.parametrize(
    ("path", "template"),
    [
        ("/jump/0b7e95c3d2a1", "/jump/<T>"),
        ("/x/a1b2c3.html", "/x/<T>.html"),
        ("/img/1920x1080/", "/img/<T>/"),
        ("/page2", "/page<N>"),  # one digit run: a name
        ("/h264/", "/h<N>/"),
        ("/2024-01-05/", "/<N>-<N>-<N>/"),  # a date keeps its runs
        ("/v1.2.3/x", "/v<N>.<N>.<N>/x"),  # a version too
    ],
)
def test_short_tokens_are_one_shape_names_stay_names(path: str, template: str) -> None:
    assert url_patterns(H + path).fine == "h.test" + template
