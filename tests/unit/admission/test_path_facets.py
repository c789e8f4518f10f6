"""Facets written as path segments (path_facets.py): read as the query they stand for by
the patterns, the facet cap and the prioritizer."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request

from extensions.admission.path_facets import FacetRun, facet_run
from extensions.admission.patterns import split_url, url_patterns
from extensions.admission.prioritizer import PARENT_META, Prioritizer
from tests.project_settings import project_settings

PRIO = Prioritizer.from_settings(project_settings())
C = PRIO.config


@pytest.mark.parametrize(
    ("path", "run"),
    [
        ("/shop/shoes/f/color-red/size-m/", FacetRun("/shop/shoes/f/", ("color", "size"), 2)),
        ("/shop/shoes/size_xl/color:red", FacetRun("/shop/shoes/", ("color", "size"), 2)),
        ("/shop/shoes/f/color-red/page-2/", FacetRun("/shop/shoes/f/", ("color", "page"), 2)),
        ("/c/shoes/brand-acme/sort-price/view-list/", FacetRun("/c/shoes/", ("brand", "sort", "view"), 3)),  # noqa: E501
        ("/docs/style-guide/", FacetRun("/docs/", ("style",), 1)),  # a slug alike: one segment
    ],
)  # fmt: skip
def test_a_trailing_run_of_filter_segments_is_read_as_parameters(path: str, run: FacetRun) -> None:
    assert facet_run(path) == run


@pytest.mark.parametrize(
    "path",
    [
        "/blog/page-2/",  # pagination alone is a real sequence of pages
        "/docs/style-guide.html",  # a file name, not a filter
        "/shop/shoes/color-red/item-5",  # the run must end the path
        "/shop/shoes/tone-red/",  # a name no shop engine list holds
        "/docs/a-very-long-slug-of-words/",  # a value is one token
        "/",
    ],
)
def test_paths_that_are_not_filters(path: str) -> None:
    assert facet_run(path).segments == 0


def test_order_and_values_of_filter_segments_make_one_pattern() -> None:
    a = url_patterns("http://h.test/shop/shoes/f/color-red/size-m/")
    b = url_patterns("http://h.test/shop/shoes/f/size-s/color-blue/")
    assert a.fine == b.fine == "h.test/shop/shoes/f/<F:color,size>/"
    # The path key (the facet cap's, and its shared record's) is the listing's path.
    assert a.path_key == "h.test/shop/shoes/f/"


def test_filters_under_names_of_the_sites_own_are_one_pattern_past_their_first() -> None:
    """`tone-red/fit-m/`: each combination its own path, names no list holds. Before,
    each filter page's further filters were a family of their own, and a shop's filter
    space took 2,895 requests (bench_traps --web dealt:35). One pattern from two pairs
    on; the first level stays its category's family of siblings."""
    deep = [
        url_patterns(f"http://h.test/shop/shoes/f/{p}/")
        for p in ("tone-red/fit-m", "maker-acme/tone-blue/pg-2", "fit-m/look-grid")
    ]
    assert {p.fine for p in deep} == {"h.test/shop/shoes/f/<P>/"}
    first = url_patterns("http://h.test/shop/shoes/f/tone-red/")
    assert first.fine == "h.test/shop/shoes/f/tone-red/"
    assert first.family == "h.test/shop/shoes/f/<W>/"


def test_filter_pages_of_every_listing_of_a_section_are_one_family() -> None:
    shoes = url_patterns("http://h.test/shop/shoes/f/color-red/")
    bags = url_patterns("http://h.test/shop/bags/f/size-m/page-2/")
    assert shoes.family == bags.family == "h.test/shop/**/<F>"
    assert url_patterns("http://h.test/docs/style-guide/").family == "h.test/docs/**/<F>"
    assert url_patterns("http://h.test/color-red/").family == "h.test/**/<F>"


def test_two_filter_segments_count_towards_the_facet_cap_one_does_not() -> None:
    assert PRIO.faceted(split_url("http://h.test/shop/shoes/f/color-red/size-m/"))
    assert not PRIO.faceted(split_url("http://h.test/shop/shoes/f/color-red/"))
    assert not PRIO.faceted(split_url("http://h.test/docs/style-guide/"))


def score(url: str, parent: str, **meta: Any) -> float:
    return PRIO.score(Request(url, meta={PARENT_META: (90, parent), "depth": 2, **meta}), url)


def test_filter_segments_cost_what_facet_parameters_do_from_two_on() -> None:
    home = "http://h.test/"
    plain = score("http://h.test/shop/shoes/", home)
    two = score("http://h.test/shop/shoes/f/color-red/size-m/", home)
    query = score("http://h.test/shop/shoes/?color=red&size=m", home)
    assert plain - two == pytest.approx(2 * (C.param_penalty + C.facet_penalty))
    assert two == pytest.approx(query)
    # One segment alone may be a slug ("style-guide"): it costs nothing.
    assert score("http://h.test/docs/style-guide/", home) == score("http://h.test/docs/x/", home)


def test_adding_a_filter_segment_to_a_filtered_listing_decays() -> None:
    url = "http://h.test/shop/shoes/f/color-red/size-m/"
    refined = score(url, "http://h.test/shop/shoes/f/color-red/")
    fresh = score(url, "http://h.test/")
    assert fresh - refined == pytest.approx(C.refine_penalty)
