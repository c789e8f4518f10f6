"""Listing pages with items of their own (admission/new_items.py): a near copy that links
pages new to the crawl outside its own family is a listing's next page; a filter page, a
calendar day or a template trap links only its own kind, or items linked already."""

from __future__ import annotations

import pytest

from extensions.admission.new_items import listed_items
from extensions.admission.patterns import url_patterns
from tests.unit.admission.golden_admission import admission

H = "http://shop.test"


def ANY(url: str) -> bool:
    """Every link admissible."""
    return True


def test_a_listings_next_page_links_new_items() -> None:
    items = [f"{H}/shop/bags/item-{n}" for n in (5, 6, 7, 8)]
    menu = [f"{H}/shop/bags/?page=3", f"{H}/shop/bags/?color=red"]  # its own path's variants
    assert listed_items(f"{H}/shop/bags/?page=2", items + menu, 2, ANY) == items
    assert listed_items(f"{H}/blog/page/3/", [f"{H}/2024/05/a-post/", f"{H}/2024/04/b/"], 2, ANY)


@pytest.mark.parametrize(
    ("page", "new"),
    [
        # A filter page: its new links are other filters of its own path.
        ("/shop/bags/?color=red", ["/shop/bags/?color=red&size=m", "/shop/bags/?size=l"]),
        # A path facet: the listing's other filter pages.
        ("/shop/bags/f/color-red/", ["/shop/bags/f/color-red/size-m/", "/shop/bags/f/size-l/"]),
        # A calendar day: its neighbours; a month by query: other months.
        ("/archive/2024/01/05/", ["/archive/2024/01/06/", "/archive/2024/01/04/"]),
        ("/events?month=1&year=2024", ["/events?month=2&year=2024", "/events?month=12&year=2023"]),
        # A growing path: its next level.
        ("/docs/v1/more/", ["/docs/v1/more/more2/", "/docs/v1/more/more3/"]),
        # Siblings of one family: slugs at the root.
        ("/broken-slug", ["/other-slug", "/third-slug"]),
        # One new item is not a listing's page (a broken link, a new menu entry).
        ("/shop/bags/?page=2", ["/shop/bags/item-5"]),
    ],
)
def test_copies_linking_their_own_kind_stay_copies(page: str, new: list[str]) -> None:
    assert not listed_items(H + page, [H + u for u in new], 2, ANY)


def test_off() -> None:
    items = [f"{H}/shop/bags/item-{n}" for n in (5, 6, 7, 8)]
    assert not listed_items(f"{H}/shop/bags/?page=2", items, 0, ANY)


def test_links_the_admission_refuses_are_no_items() -> None:
    """A blog's reply copy of an article links the article's files and closed calendar
    again: new to RecentLinks each time (refused links never enter it), no items."""
    page = f"{H}/2024/05/a-post/?replytocom=4417"
    links = [f"{H}/files/a-post.pdf", f"{H}/img/a-post.jpg", f"{H}/events?month=3&year=2031"]
    assert listed_items(page, links, 2, ANY)
    assert not listed_items(page, links, 2, lambda url: False)
    assert not listed_items(page, links, 2, lambda url: url.endswith(".pdf"))


def test_may_admit_answers_as_admission_would_without_redis() -> None:
    adm = admission()  # skips png, txt and gz files
    assert adm.may_admit("http://h.test/section/2")
    assert not adm.may_admit("http://h.test/img/a.png")  # a file
    assert not adm.may_admit("mailto:someone@h.test")  # not a fetchable URL
    adm.closed_patterns = frozenset({url_patterns("http://h.test/events?month=3").fine})
    assert not adm.may_admit("http://h.test/events?month=4")  # trap feedback closed it
    assert adm.may_admit("http://h.test/events")


def test_a_path_filter_pages_deeper_filters_are_no_items() -> None:
    """Filters written as path segments under names of the site's own: each filter page
    links the next filters one segment below it, all new. Before, 337 of a shop's filter
    copies read as listings with items and its filters never closed (2,895 requests)."""
    page = f"{H}/shop/shirts/f/tone-red/"
    deeper = [f"{H}/shop/shirts/f/tone-red/{q}/" for q in ("maker-acme", "maker-nova", "pg-2")]
    deeper.append(f"{H}/shop/shirts/f/fit-m/tone-red/")  # filters in the site's order
    assert listed_items(page, deeper, 2, ANY) == []
    products = [f"{H}/shop/shirts/alpha-tee", f"{H}/shop/shirts/beta-tee"]
    assert listed_items(page, deeper + products, 2, ANY) == products
    # A real page whose slug reads as a pair (/docs/getting-started/) reads as a filter
    # too: a near copy of it lists no items by such children (they are still followed,
    # and judged when fetched; only the copy's own verdict stays a copy).
    guide = [f"{H}/docs/getting-started/install-linux/", f"{H}/docs/getting-started/first-run/"]
    assert listed_items(f"{H}/docs/getting-started/", guide, 2, ANY) == []
