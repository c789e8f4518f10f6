"""The prioritizer's local half, one test per signal, and the URL patterns trap
feedback counts (the shared half is tests/unit/frontier/test_traps.py)."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request

from extensions.admission.patterns import split_url, url_patterns
from extensions.admission.prioritizer import (
    PARENT_META,
    SCORE_META,
    SOURCE_META,
    Prioritizer,
    bucket,
)
from tests.project_settings import project_settings

PRIO = Prioritizer.from_settings(project_settings())
C = PRIO.config


def score(url: str, **meta: Any) -> float:
    return PRIO.score(Request(url, meta=meta), url)


def test_sources_seed_then_sitemap_then_unknown_link() -> None:
    assert score("http://h.test/") == C.seed_score
    sitemap = score("http://h.test/a", **{SOURCE_META: "sitemap", "depth": 1})
    assert sitemap == C.sitemap_score - C.depth_penalty
    assert score("http://h.test/a", depth=1) == C.link_score - C.depth_penalty


def test_a_link_inherits_its_parents_score_with_decay() -> None:
    child = score("http://h.test/a", depth=1, **{PARENT_META: (80, "http://h.test/")})
    assert child == pytest.approx(80 * C.inherit - C.depth_penalty)
    grandchild = score("http://h.test/b", depth=2, **{PARENT_META: (child, "http://h.test/a")})
    assert grandchild < child  # long chains sink


def test_depth_costs_points() -> None:
    shallow = score("http://h.test/a", depth=1, **{PARENT_META: (90, "http://h.test/")})
    deep = score("http://h.test/a", depth=5, **{PARENT_META: (90, "http://h.test/")})
    assert shallow - deep == pytest.approx(4 * C.depth_penalty)


def test_query_parameters_and_facet_names_cost_points() -> None:
    parent = {PARENT_META: (90, "http://h.test/"), "depth": 1}
    plain = score("http://h.test/shop/", **parent)
    one = score("http://h.test/shop/?page=2", **parent)
    facet = score("http://h.test/shop/?color=red", **parent)
    assert plain - one == pytest.approx(C.param_penalty)
    assert plain - facet == pytest.approx(C.param_penalty + C.facet_penalty)


def test_adding_a_filter_to_a_filtered_url_decays() -> None:
    parent_url = "http://h.test/shop/?color=red"
    refine = score(
        "http://h.test/shop/?color=red&size=m", depth=2, **{PARENT_META: (90, parent_url)}
    )
    fresh = score(
        "http://h.test/shop/?color=red&size=m", depth=2, **{PARENT_META: (90, "http://h.test/")}
    )
    assert fresh - refine == pytest.approx(C.refine_penalty)


def test_a_redirect_or_retry_keeps_its_own_score() -> None:
    assert score("http://h.test/new?x=1", depth=3, **{SCORE_META: 77}) == 77


def test_scores_bucket_into_front_queues() -> None:
    assert [bucket(s, 5) for s in (100, 80.1, 80, 50, 20.1, 0)] == [0, 0, 1, 2, 3, 4]


def test_seed_home_and_sitemap_urls_beat_depth_five_links() -> None:
    chain = 100.0
    for depth in range(1, 6):
        chain = score(
            f"http://h.test/d{depth}", depth=depth, **{PARENT_META: (chain, "http://h.test/")}
        )
    sitemap = score("http://h.test/s", depth=1, **{SOURCE_META: "sitemap"})
    assert bucket(chain, 5) > bucket(sitemap, 5) == bucket(score("http://h.test/"), 5) == 0


@pytest.mark.parametrize(
    ("url", "fine"),
    [
        ("http://h.test/calendar/2024/01", "h.test/calendar/<N>+"),
        ("http://h.test/docs/v1/more/more2/more3/", "h.test/docs/v<N>/more+/"),
        ("http://h.test/trap/a/a/a", "h.test/trap/a+"),
        ("http://h.test/shop/?color=red&size=m", "h.test/shop/?color&size"),
        ("http://h.test/shop/?size=s&color=blue", "h.test/shop/?color&size"),
        ("http://h.test/s/3f2a9c0e4b5d6a7f8e9d/view", "h.test/s/<H>/view"),
        ("http://h.test/q/" + "x" * 80, "h.test/q/<L>"),
        ("http://h.test", "h.test/"),
        # A number right under the root is a segment like any (it once merged into the
        # root: "h.test+/", one pattern for every path that starts with a number).
        ("http://h.test/2024/01/05/", "h.test/<N>+/"),
        ("http://h.test/3/library/re.html", "h.test/<N>/library/re.html"),
    ],
)
def test_patterns_abstract_numbers_tokens_and_query_values(url: str, fine: str) -> None:
    assert url_patterns(url).fine == fine


@pytest.mark.parametrize(
    ("url", "family"),
    [
        ("http://h.test/shop/shoes/?page=2&ref=x", "h.test/shop/<W>/?page&ref"),
        ("http://h.test/broken-slug", "h.test/<W>"),
        ("http://h.test/blog/my-first-post", "h.test/blog/<W>"),
        ("http://h.test/shop/", "h.test/<W>/"),
        ("http://h.test/page/130", ""),  # its last segment is already abstracted
        ("http://h.test/t/3f2a9c0e4b5d6a7f8e9d/", ""),
        ("http://h.test/shop/shoes/blue-shoe-12?replytocom=7", "h.test/shop/shoes/<W>?replytocom"),
        ("http://h.test/chapter-3", ""),  # a numbered template: one pattern already
        ("http://h.test/s/12/article-345.html", ""),
        ("http://h.test/blog/my-first-post-2/", "h.test/blog/<W>/"),
        ("http://h.test/docs/v1/more/more2/", ""),
        ("http://h.test/", ""),
    ],
)
def test_a_family_abstracts_the_last_name_of_the_path(url: str, family: str) -> None:
    assert url_patterns(url).family == family


def test_a_calendar_walk_ends_where_its_score_reaches_zero() -> None:
    def ends(url: str, parent: str, parent_score: float) -> bool:
        request = Request(url, meta={PARENT_META: (parent_score, parent), "depth": 3})
        parts = split_url(url)
        return PRIO.ends_calendar_walk(request, parts, PRIO.score(request, parts))

    month = "http://h.test/calendar/2024/02"
    assert not ends(month, "http://h.test/", 90)  # entering the calendar from a page
    assert not ends(month, "http://h.test/calendar/2024/01", 90)  # its first steps
    assert ends(month, "http://h.test/calendar/2024/01", 10)
    assert not ends("http://h.test/post", "http://h.test/calendar/2024/01", 0)  # a real link


def test_a_walk_through_a_listings_filters_ends_where_its_score_reaches_zero() -> None:
    def walk(url: str, parent: str, parent_score: float) -> str:
        meta = {PARENT_META: (parent_score, parent), "depth": 3}
        parts = split_url(url)
        score = PRIO.score(Request(url, meta=meta), parts)
        return PRIO.ends_walk(meta, parts, False, score)

    listing = "http://h.test/shop/shoes/?tone=red"
    assert walk("http://h.test/shop/shoes/?fit=m&tone=red", listing, 90) == ""  # early
    assert walk("http://h.test/shop/shoes/?fit=m&tone=red", listing, 5) == "facet_walk"
    # Not a move in the filters: the listing's next page, another path, a first filter.
    assert walk("http://h.test/shop/shoes/?page=2&tone=red", listing, 5) == ""
    assert walk("http://h.test/shop/item?tone=red", listing, 5) == ""
    assert walk("http://h.test/shop/shoes/?tone=red", "http://h.test/shop/shoes/", 5) == ""
    # One parameter's other value: the next document of a ?title= or ?id= site.
    assert walk("http://h.test/index.php?title=B", "http://h.test/index.php?title=A", 0) == ""
    assert walk("http://h.test/s/?fit=l&tone=blue", "http://h.test/s/?fit=m&tone=red", 5) == (
        "facet_walk"
    )
    path_run = "http://h.test/shop/shoes/f/color-red/"
    assert walk(path_run + "size-m/", path_run, 5) == "facet_walk"


def test_a_url_growing_its_parents_sinks_and_its_walk_ends_at_zero() -> None:
    def step(url: str, parent: str, parent_score: float, depth: int) -> tuple[float, str]:
        meta = {PARENT_META: (parent_score, parent), "depth": depth}
        parts = split_url(url)
        got = PRIO.score(Request(url, meta=meta), parts)
        return got, PRIO.ends_walk(meta, parts, False, got)

    page = "http://h.test/docs/guide"
    entry, walk = step("http://h.test/search?q=crawler", page, 70, 2)
    assert walk == "" and entry == pytest.approx(70 * C.inherit - 2 - C.param_penalty)
    grown, walk = step(
        "http://h.test/search?q=crawler+sero", "http://h.test/search?q=crawler", entry, 3
    )
    assert walk == "" and grown == pytest.approx(entry * C.inherit - 3 - 5 - C.growth_penalty)
    last, walk = step(
        "http://h.test/search?q=crawler+sero+fule", "http://h.test/search?q=crawler+sero", grown, 4
    )
    assert (last, walk) == (0.0, "growth_walk")
    # The hierarchy's next level is no growth: a low-scored page's child is kept.
    assert step("http://h.test/docs/guide/install", page, 5, 9) == (0.0, "")


def test_coarse_and_host_wide_patterns() -> None:
    p = url_patterns("http://h.test/blog/my-first-post?ref=x")
    assert (p.coarse, p.host_wide, p.path_key) == (
        "h.test/blog/*?",
        "h.test/*",
        "h.test/blog/my-first-post",
    )
    assert url_patterns("http://h.test/blog/post").path_key == ""


@pytest.mark.parametrize(
    ("url", "calendar"),
    [
        ("http://h.test/archive/2024/01/05/", True),
        ("http://h.test/calendar/2024/01", True),
        ("http://h.test/events?year=2024&month=1", True),
        ("http://h.test/d/2024-05-17", True),
        ("http://h.test/2024/05/17/my-first-post", False),
        ("http://h.test/page/2024", False),
        ("http://h.test/shop/?page=3", False),
        ("http://h.test/agenda?date=2024-01-05", True),
        ("http://h.test/cal?view=month&m=2024-01", True),
        ("http://h.test/list?from=2024-01-05&page=2", True),
        ("http://h.test/planner/2024/week-02/", True),
        ("http://h.test/blog/2024/w7", True),
        ("http://h.test/kw/2024-W52", True),
        ("http://h.test/plan?year=2024&week=3", True),
        ("http://h.test/2024/week-99/", False),  # no week 99
        ("http://h.test/2024/weekly-digest/", False),
        ("http://h.test/item?id=20240105", False),  # a bare number may be an id
        ("http://h.test/diary?d=20240105", True),  # ... but not under a day's name
        ("http://h.test/cal.php?view=day&date=19991231", True),
        ("http://h.test/diary?d=20241305", False),  # no month 13
        # months by name, year parameters by their short names, a date with slashes
        ("http://h.test/calendar/2024/jan/", True),
        ("http://h.test/events/march-2024", True),
        ("http://h.test/events/2024_sept", True),
        ("http://h.test/cal?mon=1&yr=2024", True),
        ("http://h.test/cal.php?date=2024/01/05", True),
        ("http://h.test/cal.php?date=2024%2F01%2F05", True),
        ("http://h.test/blog/2024/may/my-post", False),  # a post under a month
        ("http://h.test/blog/march-madness-2024", False),
        ("http://h.test/docs/mayday-2024/", False),
        ("http://h.test/item?sku=2024-99-01", False),  # no month 99
        ("http://h.test/docs?v=2024-01-beta", False),
    ],
)
def test_a_url_naming_a_date_costs_points(url: str, calendar: bool) -> None:
    parent = {PARENT_META: (90, "http://h.test/"), "depth": 1}
    plain = score("http://h.test/x", **parent) - PRIO.shape_penalty(url, None)
    assert (plain - score(url, **parent) == pytest.approx(C.calendar_penalty)) is calendar
