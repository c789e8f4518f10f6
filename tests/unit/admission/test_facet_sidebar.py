"""Facet sidebars (admission/facet_sidebar.py): which of a page's links are its filter
sidebar's, on shops with filter names of their own, and which real sites' links are left
alone; and admission counting a marked link against its path's facet cap."""

from __future__ import annotations

import pytest
from scrapy import Request

from extensions.admission.facet_sidebar import FACET_META, SidebarConfig, sidebar_links
from extensions.admission.records import TRANSIENT_META
from tests.unit.admission.golden_admission import GoldenSpider, admission

H = "http://shop.test"
ON = SidebarConfig(names=2)


def sidebar(page: str, queries: list[str]) -> list[str]:
    """The marked links of `page` among links spelled relative to its path."""
    base = (H + page).partition("?")[0]
    links = [base + q if q.startswith("?") else H + q for q in queries]
    return sorted(u.removeprefix(H) for u in sidebar_links(H + page, links, ON))


UNNAMED = ["?tone=red", "?tone=blue", "?fit=s", "?fit=m", "?maker=acme", "?arrange=price"]


def test_filters_with_names_of_their_own_are_a_sidebar() -> None:
    marked = sidebar("/shop/shirts/", [*UNNAMED, "?pg=2", "?pg=3", "/shop/shirts/alpha-tee"])
    # tone and fit come with two values each: a sidebar. One value of maker or arrange
    # is still a filter of it; paging and the products are not.
    assert marked == [f"/shop/shirts/{q}" for q in sorted(UNNAMED)]


def test_a_filtered_pages_refinements_keep_its_query() -> None:
    page = "/shop/shirts/?tone=red"
    links = ["?tone=red&fit=s", "?fit=m&tone=red", "?tone=red&maker=acme", "?tone=red&maker=nova"]
    links += ["?tone=blue", "?tone=green"]  # moves, not refinements
    assert sidebar(page, links) == sorted(f"/shop/shirts/{q}" for q in links[:4])


def test_sections_and_languages_are_never_capped() -> None:
    links = ["?category=shoes", "?category=bags", "?brand=acme", "?brand=nova", "?lang=fr"]
    # A sidebar of two names; its brand filters capped, not the categories or a language.
    assert sidebar("/products", links) == ["/products?brand=acme", "/products?brand=nova"]


def test_a_stamp_on_every_link_is_no_filter() -> None:
    links = [q + "&ref=side0" for q in UNNAMED]
    assert len(sidebar("/shop/shirts/", links)) == len(UNNAMED)
    # The page's views (print, share, reply links) carry no stamp: still a sidebar.
    views = ["?print=1", "?share=twitter", "?share=email", "?replytocom=71"]
    assert len(sidebar("/shop/shirts/", links + views)) == len(UNNAMED) + 2


def test_a_stamp_that_changes_with_the_depth_is_no_filter_either() -> None:
    """The page was reached as ?tone=red&ref=side0 and its links carry ref=side1: the
    stamp is left out of its own query too, or no link would keep it (before, a shop
    with such stamps and filter pages of their own words cost 36 requests a category)."""
    page = "/shop/shirts/?tone=red&ref=side0"
    links = [f"?tone=red&{q}&ref=side1" for q in ("fit=s", "fit=m", "maker=acme", "maker=nova")]
    links += ["?tone=blue&ref=side1"]  # a move
    assert sidebar(page, links) == sorted(f"/shop/shirts/{q}" for q in links[:4])


def test_path_filters_under_the_listing() -> None:
    links = ["/shop/shoes/f/color-red/", "/shop/shoes/f/color-blue/", "/shop/shoes/f/size-m/"]
    links += ["/shop/shoes/f/size-l/", "/shop/shoes/f/page-2/", "/shop/shoes/nova-boot"]
    assert sidebar("/shop/shoes/", links) == sorted(links[:4])


def test_path_filters_under_names_of_their_own_on_a_filter_page() -> None:
    """/f/tone-red/ adds one more filter per link, in any order, and moves its own tone
    to other values: its run is filters, whatever their names (a manual's nested slugs
    read as name-value pairs too, but its pages move none of them)."""
    page = "/shop/shoes/f/tone-red/"
    adds = ["fit-s/tone-red", "tone-red/fit-m", "maker-acme/tone-red", "tone-red/maker-nova"]
    adds += ["arrange-new/tone-red", "tone-red/arrange-price"]
    links = [f"/shop/shoes/f/{run}/" for run in adds]
    moves = ["/shop/shoes/f/tone-blue/", "/shop/shoes/f/tone-green/"]
    links += ["/shop/shoes/f/tone-red/pg-2/", "/shop/shoes/x-9"]
    # The filter page's own pages are filter pages too (tone-red's page 2).
    assert sidebar(page, links + moves) == sorted(links[:7])
    marks = sidebar_links(H + page, [H + u for u in links + moves], ON)
    assert marks[H + links[0]] == "fit" and marks[H + links[2]] == "maker"
    # One move or none: a manual's page may link a sibling that reads so (getting-help/).
    assert sidebar(page, links + moves[:1]) == sidebar(page, links) == []


def test_a_listings_own_page_under_a_proven_base_needs_no_moves() -> None:
    """/f/pg-2/ (the listing's page 2) links its filters, and its moves are numbers:
    alone it shows nothing; once a filter page proved the base, its filters are its
    sidebar's too (before, pg-2/tone-red/ and the like went uncapped)."""
    base = "/shop/shoes/f/"
    adds = ["tone-red", "tone-blue", "fit-s", "fit-m", "maker-acme", "maker-nova"]
    links = [f"{base}pg-2/{q}/" for q in adds] + [f"{base}pg-1/", f"{base}pg-3/"]
    assert sidebar(base + "pg-2/", links) == []
    proven: dict[str, bool] = {}
    filters = [f"{base}tone-red/{q}/" for q in ("fit-s", "fit-m", "maker-acme", "maker-nova")]
    filters += [f"{base}tone-red/arrange-new/", f"{base}tone-red/arrange-price/"]
    filters += [f"{base}tone-blue/", f"{base}tone-green/"]
    page = H + base + "tone-red/"
    assert sidebar_links(page, [H + u for u in filters], ON, proven)  # proves the base
    assert list(proven) == [H + base]
    marked = sidebar_links(H + base + "pg-2/", [H + u for u in links], ON, proven)
    assert sorted(u.removeprefix(H) for u in marked) == sorted(links[:6])


def test_a_category_beside_its_filters_is_no_filter() -> None:
    """No marker directory: /shop/mens-shoes/ reads as a run of its own, and its move to
    another category (/shop/mens-jackets/) proves the run; only the refinements count."""
    links = ["tone-red", "tone-blue", "fit-s", "fit-m", "maker-acme", "maker-nova"]
    links = [f"/shop/mens-shoes/{q}/" for q in links] + ["/shop/mens-jackets/", "/shop/mens-hats/"]
    assert sidebar("/shop/mens-shoes/", links) == sorted(links[:6])


def test_a_guides_chapter_is_no_filter_page() -> None:
    """/guide/part-1/chapter-2/ links its topics and its sibling chapters: numbers move
    along a sequence, and its view links (?share=, ?action=) make a sidebar of their own
    that says nothing of the chapter's children (32 topics of dealt:34 were capped so)."""
    page = "/guide/part-1/chapter-2/"
    links = [f"/guide/part-1/chapter-2/topic-{n}" for n in range(1, 5)]
    links += [f"/guide/part-1/chapter-{n}/" for n in (1, 3, 4)]
    views = ["?share=mail", "?share=x", "?action=edit", "?action=history", "?print=1"]
    marked = sidebar(page, links + views)
    assert marked == sorted(page + q for q in views[:4])


# Real sites' links that read like a sidebar in part: (page, links).
REAL_SITES: list[tuple[str, list[str]]] = [
    # An API reference: its version switcher moves, its endpoints read as two names.
    (
        "/docs/api-v2/",
        [
            "/docs/api-v1/",
            "/docs/api-v3/",
            "/docs/api-v2/auth-basic/",
            "/docs/api-v2/auth-oauth/",
            "/docs/api-v2/user-create/",
            "/docs/api-v2/user-delete/",
        ],
    ),
    # Two word moves, but children under two names only: a shop has more filters.
    (
        "/guide/getting-started/",
        [
            "/guide/getting-help/",
            "/guide/getting-involved/",
            "/guide/getting-started/install-linux/",
            "/guide/getting-started/install-macos/",
            "/guide/getting-started/config-basic/",
            "/guide/getting-started/config-advanced/",
        ],
    ),
    # A manual's nested two-word slugs, two families of them, and no move.
    (
        "/guide/getting-started/",
        [
            "/guide/getting-started/install-linux/",
            "/guide/getting-started/install-macos/",
            "/guide/getting-started/config-basic/",
            "/guide/getting-started/config-advanced/",
            "/guide/getting-help/",
            "/guide/release-notes/",
            "/guide/",
        ],
    ),
    # One filter name only: a language or version switcher, paging, a wiki's actions.
    ("/docs/intro", ["?lang=fr", "?lang=de", "?lang=ja", "?lang=es"]),
    ("/list", ["?page=2", "?page=3", "?sort=new"]),
    (
        "/w?title=Foo",
        ["?title=Foo&action=edit", "?title=Foo&action=history", "?title=Foo&oldid=7"],
    ),
    # Moves to other documents: MediaWiki's titles, a CMS's ids and views.
    ("/w?title=Foo", ["?title=Bar", "?title=Baz", "?title=Qux", "?title=Foo&action=edit"]),
    (
        "/index.php",
        [
            "?option=com_content&view=article&id=5",
            "?option=com_content&view=category&id=2",
            "?option=com_contact&view=contact&id=1",
            "?option=com_content&view=article&id=9",
        ],
    ),
    # Numbers: items and pages, however many names.
    ("/catalog", ["?id=1", "?id=2", "?cat=3", "?cat=4", "?page=2", "?page=3"]),
    # Slugs spelled like filters, by names no shop engine uses for one.
    ("/docs/", ["/docs/getting-started/", "/docs/getting-help/", "/docs/release-notes/"]),
]


@pytest.mark.parametrize(("page", "links"), REAL_SITES)
def test_real_sites_links_are_left_alone(page: str, links: list[str]) -> None:
    assert sidebar(page, links) == []


def test_off() -> None:
    links = [H + "/shop/shirts/" + q for q in UNNAMED]
    assert sidebar_links(H + "/shop/shirts/", links, SidebarConfig(names=0)) == {}


def test_the_mark_is_transient() -> None:
    assert FACET_META in TRANSIENT_META  # never stored in a queued URL's record


def test_admission_counts_a_marked_link_against_its_paths_facet_cap() -> None:
    adm, spider = admission(), GoldenSpider()
    url = "http://shop.test/shop/shirts/?tone=red"
    plain = adm.item(Request(url), spider)
    marked = adm.item(Request(url, meta={FACET_META: "tone"}), spider)
    assert plain.patterns[4] == ""  # no facet-named parameter: uncapped
    assert marked.patterns[4] == plain.patterns[3] == "shop.test/shop/shirts/"
    assert plain.patterns[:4] == marked.patterns[:4]
    assert marked.record == plain.record  # the mark is not stored


def test_once_a_path_showed_a_sidebar_its_other_filters_are_capped_too() -> None:
    """A filter page's move to another value (?tone=red -> ?tone=green) is no refinement
    and goes unmarked; the same filters come back unmarked once a tracking stamp on the
    sidebar's links is learned as noise. Both count against the path's cap."""
    adm, spider = admission(), GoldenSpider()
    base = "http://shop.test/shop/shirts/"
    adm.item(Request(base + "?tone=red", meta={FACET_META: "tone"}), spider)
    moved = adm.item(Request(base + "?tone=green"), spider)
    assert moved.patterns[4] == "shop.test/shop/shirts/"
    for query in ("?pg=2", "?category=tees", "?lang=fr", "?id=7"):  # paging, places, numbers
        assert adm.item(Request(base + query), spider).patterns[4] == "", query
    other = adm.item(Request("http://shop.test/shop/bags/?tone=green"), spider)
    assert other.patterns[4] == ""  # another path: no sidebar seen there


def test_a_path_filters_sidebar_caps_its_base_and_its_moves() -> None:
    """A marked /f/tone-red/fit-m/ counts against its base's cap (host + /shop/shoes/f/);
    then the same base's URLs with a pair of a name its sidebar added count too (a move
    to another value, another order), and a category beside them does not."""
    adm, spider = admission(), GoldenSpider()
    base = "http://shop.test/shop/shoes/f/"
    before = adm.item(Request(base + "fit-l/"), spider)
    assert before.patterns[4] == ""  # no sidebar seen yet: a slug like any other
    adm.item(Request(base + "tone-red/fit-m/", meta={FACET_META: "fit"}), spider)
    for run in ("tone-red/fit-s/", "fit-l/", "fit-s/tone-blue/"):
        assert adm.item(Request(base + run), spider).patterns[4] == "shop.test/shop/shoes/f/"
    for run in ("tone-red/", "pg-2/", "nova-boot"):  # a name no sidebar added, a number
        assert adm.item(Request(base + run), spider).patterns[4] == "", run
