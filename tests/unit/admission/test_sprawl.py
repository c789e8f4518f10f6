"""Generator traps, the worker's half (admission/sprawl.py, frontier/settled_acks.py): a
link's shape, a page's sprawl candidacy, and its ack settled by its links' admit
replies."""

from __future__ import annotations

import pytest
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from extensions.admission.budgets import pattern_state
from extensions.admission.new_items import listing
from extensions.admission.records import AdmitItem
from extensions.admission.sprawl import (
    SitePages,
    SprawlConfig,
    candidate_links,
    judge,
    link_shape,
    links_its_kind,
    site_links,
    sprawl_generation,
)
from extensions.frontier.core import DownloadEvent
from extensions.frontier.settled_acks import SettledAcks

H = "http://gen.test"
CONFIG = SprawlConfig(min_links=2, menu_pages=8, chain=3, chain_site_pages=30)
MENU = f"{H}/gen/start"  # linked again from 20 pages: the generator's own menu


def relinked(url: str) -> int:
    return 20 if url == MENU else 1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("/gen/alpha-beta", "/gen/gamma-delta"),  # word slugs
        ("/item/48213", "/item/9"),  # numbers
        ("/t/3f2a9c0e4b5d6a7f8e9d/", "/t/00aa11bb22cc33dd44ee/"),  # tokens
        ("/lookup?term=a+b", "/lookup?term=c"),  # query values
        ("/lib/river/fern.html", "/lib/amber/orbit.html"),  # a directory and a name
        ("/about", "/contact"),  # root-level pages
        ("/my-first-post/", "/another-post/"),  # root-level folders (permalinks)
        ("/maze/a/b", "/maze/c/d/e/f"),  # any depth under one directory
        ("/lookup?term=a", "/search?term=b"),  # a root-level name is no directory
    ],
)
def test_a_generators_urls_share_a_shape(a: str, b: str) -> None:
    assert link_shape(H + a) == link_shape(H + b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("/gen/alpha", "/gen/alpha/"),  # a folder
        ("/gen/a", "/a"),  # a root-level page
        ("/gen/a/", "/a/"),  # a root-level folder
        ("/gen/a", "/docs/a"),  # another section
        ("/", "/about"),  # the home page
        ("/lib/a.html", "/lib/a.pdf"),  # another extension
        ("/lookup?term=a", "/lookup?term=a&page=2"),  # other parameter names
        ("/gen/a", "http://other.test/gen/a"),  # another site
    ],
)
def test_other_shapes(a: str, b: str) -> None:
    assert link_shape(H + a) != link_shape(b if b.startswith("http") else H + b)


def test_subdomains_of_one_registered_domain_share_a_shape() -> None:
    """A wildcard-DNS farm's made-up hosts are one site; a hosting platform's (the PSL's
    private section: github.io) are not."""
    assert link_shape("http://w1.farm.test:8080/") == link_shape("http://farm.test:8080/")
    assert link_shape("http://a.farm.test/x/y") == link_shape("http://b.farm.test/x/z")
    assert link_shape("http://a.farm.test:1/") != link_shape("http://a.farm.test:2/")
    assert link_shape("https://ann.github.io/") != link_shape("https://bob.github.io/")
    assert link_shape("http://[::1]:80/a") != link_shape("http://[::2]:80/b")


def test_a_page_whose_own_shape_links_are_all_fresh_is_a_candidate() -> None:
    page = f"{H}/gen/a-b"
    fresh = [f"{H}/gen/c-d", f"{H}/gen/e-f", f"{H}/about"]
    assert candidate_links(page, fresh, [f"{H}/", MENU], CONFIG, relinked) == fresh[:2]


@pytest.mark.parametrize(
    ("fresh", "repeated", "reason"),
    [
        (["/gen/c-d"], [], "one own-shape link is not enough"),
        (["/gen/c-d", "/gen/e-f"], ["/gen/prev"], "it links back into its section"),
        (["/gen/c-d", "/gen/e-f"], ["/gen/start", "/gen/prev"], "a link back beside the menu"),
        (["/gen/c-d", "/docs/e"], [], "one of its own shape"),
        ([], [], "no links"),
    ],
)
def test_not_a_candidate(fresh: list[str], repeated: list[str], reason: str) -> None:
    page = f"{H}/gen/a-b"
    got = candidate_links(page, [H + u for u in fresh], [H + u for u in repeated], CONFIG, relinked)
    assert got == [], reason


def test_off_at_zero_min_links() -> None:
    off = SprawlConfig(min_links=0, menu_pages=8, chain=3, chain_site_pages=30)
    assert candidate_links(f"{H}/gen/a", [f"{H}/gen/b", f"{H}/gen/c"], [], off, relinked) == []


def test_a_repeat_is_menu_from_menu_pages_on() -> None:
    page, fresh, back = f"{H}/gen/a", [f"{H}/gen/b", f"{H}/gen/c"], [f"{H}/gen/x"]
    assert candidate_links(page, fresh, back, CONFIG, lambda url: 7) == []
    assert candidate_links(page, fresh, back, CONFIG, lambda url: 8) == fresh


def ack(lease: str, outcome: str = "sprawl") -> DownloadEvent:
    return DownloadEvent("ack", lease, 1.0, host="gen.test", outcome=outcome, patterns=("p",))


def marked(lease: str) -> AdmitItem:
    return AdmitItem("k", "ip", "gen.test", -1, "{}", settles=lease)


def test_an_ack_is_settled_by_its_links_admit_reply() -> None:
    stats = MemoryStatsCollector(get_crawler())
    acks = SettledAcks(stats, new_items=2)
    acks.heard({"settled": ["a"]})
    events = [ack("a"), ack("b"), ack("c"), ack("d", "new")]
    judged = acks.judged(events, [marked("c")])
    assert [e.outcome for e in judged] == ["new", "sprawl", "new", "new"]
    assert stats.get_stats() == {
        "frontier/sprawl/settled": 1,
        "frontier/sprawl/reported": 1,
        "frontier/sprawl/unsettled": 1,
    }
    # A settled lease is used once: a page is acked once.
    assert [e.outcome for e in acks.judged([ack("a")], [])] == ["sprawl"]
    # A chain's page waits alike: "new" when settled, its own outcome when reported.
    acks.heard({"settled": ["e"]})
    chain = [ack("e", "sprawl_chain"), ack("f", "sprawl_chain")]
    assert [e.outcome for e in acks.judged(chain, [])] == ["new", "sprawl_chain"]


def test_a_listing_copy_is_new_when_its_items_were_new_to_the_crawl() -> None:
    """A near copy whose links are new to this worker is a listing's next page only if
    the crawl's URL-seen queued PRIORITY_NEW_ITEMS of its items as new (another worker
    may have queued them): else its copy outcome, held back, stands."""
    stats = MemoryStatsCollector(get_crawler())
    acks = SettledAcks(stats, new_items=2)
    acks.heard({"fresh": {"a": 2, "b": 1}})
    acks.heard({"fresh": {"b": 1}, "settled": ["c"]})  # a page's items over two admits
    held = ["duplicate"] * 4 + ["copy"]
    events = [ack(lease, listing(h)) for lease, h in zip("abcde", held, strict=True)]
    judged = acks.judged(events, [marked("d")])
    assert [e.outcome for e in judged] == ["new", "new", "duplicate", "new", "copy"]
    assert stats.get_stats() == {
        "frontier/listing/new": 2,
        "frontier/listing/copy": 2,
        "frontier/listing/unsettled": 1,
    }
    assert acks.judged([ack("a", listing("copy"))], [])[0].outcome == "copy"  # used once


def test_operators_read_a_patterns_sprawl_pages_from_its_record() -> None:
    # admitted, n, bad, fresh, state, probes, outcomes, live, dead, dead_n, sprawl pages
    shown = pattern_state("12,7.500,7.500,0,2,3,9,0,0,0,8")
    assert (shown["state"], shown["sprawl_pages"], shown["bad_share"]) == ("closed", 8, 1.0)
    assert "sprawl_pages" not in pattern_state("12")  # never sprawl: nothing said


def test_a_chain_of_sprawl_pages_ends_at_its_third_generation() -> None:
    """The entry (no generation on its request) is 1, a page its marked link led to 2...;
    the third reports sprawl_chain and its new links are dropped, not followed."""
    assert [sprawl_generation(None), sprawl_generation(1), sprawl_generation(2)] == [1, 2, 3]
    assert sprawl_generation("1") == 1  # not a generation: an entry
    fresh = [f"{H}/gen/a-b", f"{H}/gen/c-d"]
    entry = judge(f"{H}/gen/x-y", fresh, [MENU], CONFIG, relinked, None, 50)
    assert entry == (("sprawl", 1, fresh, []))
    end = judge(f"{H}/gen/x-y", fresh, [MENU], CONFIG, relinked, 2, 50)
    assert end == ("sprawl_chain", 3, [], fresh)
    endless = SprawlConfig(min_links=2, menu_pages=8, chain=0, chain_site_pages=0)
    assert judge(f"{H}/gen/x-y", fresh, [], endless, relinked, 9, 50) == ("sprawl", 10, fresh, [])


# A generator that mixes its links' shapes: few of any one shape, all new, none back.
MIXED = [f"{H}/w/oak-fern-moss", f"{H}/id/3f2a9c0e4b5d", f"{H}/n/4821/", f"{H}/a/b/9.html"]


def test_a_page_linking_back_nowhere_on_its_site_goes_on_with_its_chain() -> None:
    """No shape has two of its links (not a candidate), yet it links back nowhere: the
    chain goes on through it (its outcome stands) and ends at the third generation."""
    page = f"{H}/w/red-fox-den"
    links = [*MIXED, "http://other.test/x/y"]
    assert candidate_links(page, links, [MENU], CONFIG, relinked) == []
    assert site_links(page, links, [MENU], CONFIG, relinked) == MIXED
    assert judge(page, links, [MENU], CONFIG, relinked, None, 50) == (None, 1, MIXED, [])
    assert judge(page, links, [MENU], CONFIG, relinked, 1, 50) == (None, 2, MIXED, [])
    assert judge(page, links, [MENU], CONFIG, relinked, 2, 50) == ("sprawl_chain", 3, [], MIXED)


def test_a_page_linking_back_anywhere_on_its_site_ends_no_chain() -> None:
    """A repeat on its site that few pages linked (its section, a sibling) of any shape is
    a link back; one on another site, or the menu, is not."""
    page = f"{H}/w/red-fox-den"
    back = f"{H}/docs/guide/"
    assert judge(page, MIXED, [MENU, back], CONFIG, relinked, 2, 50) is None
    assert site_links(page, MIXED, ["http://other.test/a/b"], CONFIG, relinked) == MIXED
    # Its own-shape links still make it a candidate, as before: only they are marked.
    own = [f"{H}/w/a-b", f"{H}/w/c-d"]
    marked = [*own, MIXED[0]]  # /w/oak-fern-moss is of its shape too
    assert judge(page, [*own, *MIXED], [back], CONFIG, relinked, None, 50) == (
        "sprawl",
        1,
        marked,
        [],
    )


def test_a_tree_page_whose_children_are_of_another_shape_advances_no_chain() -> None:
    """A shop's category links its products and its next page, all new, and nothing back
    but the menu: none is of its own shape, so it starts no chain and advances none (home
    -> /shop/ -> a category lost its products when it did); a chain's page of that kind
    (a tarpit's page of a rare shape) passes a young chain on as it came."""
    category = f"{H}/shop/shoes/"
    children = [f"{H}/shop/shoes/red-boot-{n}" for n in range(5)] + [f"{category}?page=2"]
    assert site_links(category, children, [MENU], CONFIG, relinked) == children
    assert not links_its_kind(category, children)
    assert judge(category, children, [MENU], CONFIG, relinked, None, 50) is None
    assert judge(category, children, [MENU], CONFIG, relinked, 1, 50) == (None, 1, children, [])
    # Two pages of their kind advanced the chain already: a tarpit's, it goes on.
    tarpit = judge(category, children, [MENU], CONFIG, relinked, 2, 50)
    assert tarpit == ("sprawl_chain", 3, [], children)


def test_a_chain_ends_only_past_a_sites_first_pages() -> None:
    """A site's first pages link new pages only: its third chain page closes its pattern
    (sprawl_chain) but its links are followed until PRIORITY_SPRAWL_CHAIN_SITE_PAGES."""
    fresh = [f"{H}/gen/a-b", f"{H}/gen/c-d"]
    early = judge(f"{H}/gen/x-y", fresh, [MENU], CONFIG, relinked, 2, 29)
    assert early == ("sprawl_chain", 3, fresh, [])
    assert judge(f"{H}/gen/x-y", fresh, [MENU], CONFIG, relinked, 2, 30).dropped == fresh
    pages = SitePages(capacity=2)
    counts = [pages.count(u) for u in (f"{H}/a", "http://www.gen.test/b", f"{H}/c/d")]
    assert counts == [1, 2, 3]  # one site: gen.test
    assert [pages.count("http://x.test/"), pages.count("http://y.test/")] == [1, 1]
    assert pages.count(f"{H}/e") == 1  # the oldest site was forgotten
