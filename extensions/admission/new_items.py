"""Listing pages with items of their own: a near duplicate that links new pages is new.

Why: a listing's page 2 is its page 1 again in all but its items: the same heading, the
same intro, the same filters and menus; a shop's product cards or a blog archive's titles
are short link texts the main-text extractor may drop as furniture. Its main text is then
a near duplicate of page 1's, trap feedback counted the page as a copy, the listing's
family of pages (/shop/<W>/?page) closed, and every later page of every listing was
dropped with the products only they link: 93 of 520 real pages of a shop web whose
listings are paged (tests/integration/test_shop_categories.py).

What a duplicate does not do is link pages nobody linked before. A near duplicate with
PRIORITY_NEW_ITEMS links new to this worker (RecentLinks.split) outside its own family
(not its URL pattern or pattern family, not a query variant of its own path: a calendar
day's next day, a filter page's next filter) lists items of its own: its outcome is
"new". A filter page lists items its listing linked already; a template trap links only
its own kind, and a filter page written in the path (`/f/tone-red/`, names of the site's
own) links further filters under its base (`/f/maker-acme/tone-red/`): none of those is
an item. New to this worker is not new to the crawl when several workers share it:
the copy's items go to admission marked with its lease, and it is "new" only when the
admit script queued PRIORITY_NEW_ITEMS of them as new to the crawl (URL-seen:
frontier/settled_acks.py); otherwise its copy outcome stands.

An item is a link the admission would take (`admissible`: Admission.may_admit). A link it
refuses never enters RecentLinks, so it is "new" on every page that carries it: a
blog's `?replytocom=<comment>` copies of an article link the article's image, PDF and
calendar again, and read as listings with items until 352 such copies of one host were
fetched (bench_traps --alternates, bench/README "Alternate views").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from extensions.admission.path_facets import pair_run
from extensions.admission.patterns import families, url_patterns
from extensions.config import Setting, Table, at_least


@dataclass(frozen=True)
class NewItemsConfig:
    least: int  # PRIORITY_NEW_ITEMS: new links outside its family that make a copy new; 0 off


NEW_ITEMS = Table(NewItemsConfig, Setting("PRIORITY_NEW_ITEMS", "least", int, at_least(0)))
# A copy's outcome held back until its items settle it (frontier/settled_acks.py):
# LISTING + the copy outcome, "new" if enough of its items were new to the crawl.
LISTING = "listing/"
# Outcomes a listing with new items overrides.
COPY_OUTCOMES = frozenset(("duplicate", "copy"))


def listed_items(
    page_url: str, new_links: list[str], least: int, admissible: Callable[[str], bool]
) -> list[str]:
    """The page's items: those of `new_links` (new to this worker) outside the page's own
    family and `admissible`, when there are `least` or more; else [] (and when least <= 0:
    off)."""
    if least <= 0 or len(new_links) < least:
        return []
    mine = url_patterns(page_url)
    # A same-stem run's next level is its own kind too (/more/ -> /more/more2/: "more+").
    own = frozenset((mine.fine, mine.fine.replace("+", ""), *families(mine.family)))
    path = page_url.partition("#")[0].partition("?")[0]
    # A page whose path ends in name-value pairs (/f/tone-red/) is a filter of its base;
    # a link under that base with those names and more is a further filter, not an item.
    run = pair_run(path)
    items = []
    for url in new_links:
        bare = url.partition("?")[0]
        if bare == path:
            continue  # a query variant of this page: a filter, a sort, its next page
        if run[1] and _refines(pair_run(bare), run):
            continue  # a deeper filter of this filter page (names of the site's own)
        p = url_patterns(url)
        if p.fine.replace("+", "") in own or not own.isdisjoint(families(p.family)):
            continue  # its own kind: a calendar's next day, a template's next level
        if p.path_key and p.path_key == mine.path_key:
            continue  # a path facet of the same listing
        if not admissible(url):
            continue  # a file, a closed pattern's URL, a filtered one: no page to list
        items.append(url)
    return items if len(items) >= least else []


def _refines(link: tuple[str, tuple[str, ...]], page: tuple[str, tuple[str, ...]]) -> bool:
    """A link's pair run (path_facets.pair_run) refines the page's: the same base, the
    page's names and more (a product slug that reads as a pair, "alpha-tee", has names of
    its own)."""
    return link[0] == page[0] and set(link[1]) > set(page[1])


def listing(held: str) -> str:
    """The outcome of a copy whose items settle its verdict (`held` if they do not)."""
    return LISTING + held
