"""Generator traps: a page that links only URLs of its own shape that nobody linked before.

Why: a generator (a tarpit such as Nepenthes or Iocaine, a CMS's endless "related"
pages) serves unique prose on every page and links only made-up URLs of its own space.
Content feedback sees new pages, the URL rules see ordinary slugs, numbers or tokens,
and before this only the host budget ended it: 2,947 of 3,000 requests in a measured
crawl of a host with 50 real pages (bench/README.md, "Generator traps"). What gives it
away is the link graph. A real page links back into its site (navigation, breadcrumbs,
siblings, its listing), so among its links of its own shape some were linked before. A
generator's page links only URLs nobody linked before: every one has in-degree 1.

A page is a **sprawl candidate** when PRIORITY_SPRAWL_MIN_LINKS or more of its links
have its own shape (`link_shape`: registered domain, first directory, extension,
trailing slash, query names; not its depth, as a tarpit's paths can be of any length,
nor its subdomain, as a wildcard-DNS farm's pages are each a new made-up host) and are
new to this worker, and none of its links of that shape that this worker queued before
(RecentLinks.split's known links) is a link back. A known link that
PRIORITY_SPRAWL_MENU_PAGES pages or more linked again is the site's menu, not a link
back: a generator that puts a fixed menu of its own pages on every page gives itself
away once the menu is known, while a real page links back into its section (its
previous page, its parent, its siblings: a few pages each) as well as to the menu.

A candidate's fresh links of its own shape go to admission marked with its lease
(records.SETTLES_META); the admit script answers which pages had one of them in URL-seen
already ("settled": another worker linked it), and the page's ack then reports "new"
instead of "sprawl" (frontier/settled_acks.py): a sprawl verdict uses every worker's view, not one
worker's cache. Trap feedback (frontier/lua/traps.lua) closes a pattern once
PRIORITY_TRAP_SPRAWL_AFTER of its pages were sprawl and they are most of its recent pages.

A tarpit is also a **chain**: its entry page is sprawl, the pages it links are sprawl, and
theirs after them, while a real section's pages link back into it within a step or two. A
sprawl page's marked links carry its generation (SPRAWL_GEN_META, kept in their frontier
records: the entry is generation 1, a page reached through its link 2, ...), and a sprawl
page of generation PRIORITY_SPRAWL_CHAIN reports "sprawl_chain", which closes its pattern
at once as if PRIORITY_TRAP_SPRAWL_AFTER of its pages had been sprawl: a tarpit costs its
entry, the pages it links and one more (~5-7 requests) instead of
PRIORITY_TRAP_SPRAWL_AFTER. A page that links back breaks the chain: its links carry no
generation.

A generator need not keep to one shape: one that mixes slugs, hex ids, numbers, .html
names and query strings in every page's links has few of any one shape on a page, so
most of its pages were no candidates and reported "new" (which reopened its closed
patterns), and each of its URLs was a pattern of its own. An independent adversarial web
(two such tarpits, one on a real blog's host) took 4,035 of a crawl's 6,074 requests,
and the crawl never ended by itself. So a chain also goes on through a page that links
back nowhere on its **site** (its registered domain: no repeat there but the menu) and
links at least one new page of its own shape, whatever the shapes of its other links
(`site_links`, `links_its_kind`): its new links on its site carry the next generation,
and such a page starts a chain too. One that links back nowhere but to no page of its
kind (a tarpit's page of a rare shape) passes a young chain on as it came, neither
advancing nor breaking it, and advances one that two pages of their kind advanced
already; it starts none (a break restarted the count below it, and the tarpits cost
91-2,276 requests from run to run). Such pages' own outcomes stand (only a candidate's
pattern counts sprawl). And a chain **ends** at its PRIORITY_SPRAWL_CHAIN-th generation:
that page's new links on its site are not followed (counted, logged once a site), as
more of the same, and it reports "sprawl_chain" whatever its shape (its pattern closes:
the generator's next way in of that shape is refused): a tarpit then costs ~1 + b + b^2
pages an entry (b: its pages' links) whatever its shapes, and a crawl with one ends. A
real site's tree does not advance a chain: a page's children are of another shape than
its own (a category and its products, a section and its pages), and its pages link back
into it (a parent, a sibling, the previous page). But a site's first pages link only new
pages, as a small site of pages linking each other at random does for a while (one of 24
pages lost 11 to ends): a chain ends only once this worker judged
PRIORITY_SPRAWL_CHAIN_SITE_PAGES pages of the site (`SitePages`); before that its third
page only closes its pattern, as always. A dropped link is not in URL-seen: another page
that links it later queues it.

Not caught: a generator whose pages also link back to a few earlier pages of its own
(as a real section does), or one whose pages link only pages of another shape (/a/
pages to /b/ ones and back: counting every shape would make a shop's category pages,
new products and a menu, sprawl); only the host budget bounds them. Wrongly caught: a
real site whose pages link two or three new pages of their kind and nothing back, three
deep (a wiki of random links, "next" links only): the third page's links are followed
only if another page links them (bench/README.md, "Generator traps").
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from extensions.admission.domains import registered_domain
from extensions.bounded import keep_newest
from extensions.config import Setting, Table, at_least

logger = logging.getLogger(__name__)

# A sprawl page's marked links: its generation (1 for a page no sprawl page's link led to).
SPRAWL_GEN_META = "frontier_sprawl_gen"
SPRAWL_OUTCOMES = frozenset(("sprawl", "sprawl_chain"))
# Sites whose first chain end this worker logged at INFO (later ones at DEBUG), at most.
_LOGGED_SITES: set[str] = set()
_MAX_LOGGED_SITES = 10_000
# An extension is the last segment's text after its last dot when at most this long.
_MAX_EXTENSION = 6


@dataclass(frozen=True)
class SprawlConfig:
    min_links: int  # PRIORITY_SPRAWL_MIN_LINKS: own-shape links that make a candidate; 0 off
    menu_pages: int  # PRIORITY_SPRAWL_MENU_PAGES: a repeat linked again this often is menu
    chain: int  # PRIORITY_SPRAWL_CHAIN: the generation whose sprawl page closes; 0 off
    chain_site_pages: int  # PRIORITY_SPRAWL_CHAIN_SITE_PAGES: a site's pages before an end


SPRAWL = Table(
    SprawlConfig,
    Setting("PRIORITY_SPRAWL_MIN_LINKS", "min_links", int, at_least(0)),
    Setting("PRIORITY_SPRAWL_MENU_PAGES", "menu_pages", int, at_least(2)),
    Setting("PRIORITY_SPRAWL_CHAIN", "chain", int, at_least(0)),
    Setting("PRIORITY_SPRAWL_CHAIN_SITE_PAGES", "chain_site_pages", int, at_least(0)),
)


class LinkShape(NamedTuple):
    """What a generator keeps from URL to URL while names, numbers, tokens, the number
    of segments and the subdomain change. A tree's child has its parent's shape too, but
    a real tree links back (its parent, its siblings): only a page linking down alone
    counts."""

    site: str  # the registered domain (domains.py) and port
    directory: str  # the first segment of a path of two or more names, else ''
    extension: str  # '.html', or '' when none
    folder: bool  # the path ends with '/'
    names: str  # sorted query parameter names, comma-joined


def link_shape(url: str) -> LinkShape:
    """The shape of an absolute http(s) URL (a page's extracted link: no fragment)."""
    authority, _, tail = url.partition("://")[2].partition("/")
    site = _site(authority.lower())
    path, _, query = tail.partition("?")
    segments = path.split("/")
    last = segments[-1]
    dot = last.rfind(".")
    extension = last[dot:].lower() if dot > 0 and len(last) - dot <= _MAX_EXTENSION else ""
    names = ",".join(sorted({p.partition("=")[0] for p in query.split("&")})) if query else ""
    # A page of its own under the root (/about, /my-post/) is in no directory.
    directory = segments[0] if len(segments) > 2 or (len(segments) == 2 and last) else ""
    return LinkShape(site, directory, extension, not last, names)


def _site(authority: str) -> str:
    """host[:port] -> registered domain[:port] (an IPv6 literal as it is)."""
    if authority.startswith("["):
        return authority
    host, colon, port = authority.partition(":")
    return registered_domain(host) + colon + port


def candidate_links(
    page_url: str,
    fresh: list[str],
    repeated: list[str],
    config: SprawlConfig,
    relinked: Callable[[str], int],
) -> list[str]:
    """The page's fresh links of its own shape when it is a sprawl candidate (at least
    config.min_links of them, and no repeat of its shape that fewer than
    config.menu_pages pages linked again: `relinked`, RecentLinks'), else []."""
    return _none_back(link_shape, link_shape(page_url), fresh, repeated, config, relinked)


def site_links(
    page_url: str,
    fresh: list[str],
    repeated: list[str],
    config: SprawlConfig,
    relinked: Callable[[str], int],
) -> list[str]:
    """The page's fresh links on its own site (registered domain and port) when they are
    at least config.min_links and none of its repeats there links back, else []: a page
    that links back nowhere on its site, whatever the shapes of its links."""
    return _none_back(_link_site, _link_site(page_url), fresh, repeated, config, relinked)


def _none_back(
    key: Callable[[str], Any],
    page_key: Any,
    fresh: list[str],
    repeated: list[str],
    config: SprawlConfig,
    relinked: Callable[[str], int],
) -> list[str]:
    """The fresh links whose `key` is the page's, when they are at least config.min_links
    and no repeat with that key is a link back (one that fewer than config.menu_pages
    pages linked again), else []."""
    if config.min_links <= 0 or len(fresh) < config.min_links:
        return []
    # The few fresh links first: most pages have fewer of its shape than min_links, and
    # their many repeats (navigation) then cost no key at all.
    own = [url for url in fresh if key(url) == page_key]
    if len(own) < config.min_links:
        return []
    menu = config.menu_pages
    if any(relinked(url) < menu and key(url) == page_key for url in repeated):
        return []
    return own


def links_its_kind(page_url: str, links: list[str]) -> bool:
    """One of `links` has the page's own shape. (A real tree's page links its children,
    of another shape than its own: a category its products, a section its pages.)"""
    shape = link_shape(page_url)
    return any(link_shape(url) == shape for url in links)


def _link_site(url: str) -> str:
    return _site(url.partition("://")[2].partition("/")[0].partition("?")[0].lower())


class SprawlVerdict(NamedTuple):
    """What a page's links say of it (judge)."""

    outcome: str | None  # "sprawl" / "sprawl_chain"; None: the page's outcome stands
    generation: int  # the page's generation in its chain
    marked: list[str]  # links to mark with the generation (and, sprawl, the lease)
    dropped: list[str]  # links not followed: the page ends its chain


def judge(
    page_url: str,
    fresh: list[str],
    repeated: list[str],
    config: SprawlConfig,
    relinked: Callable[[str], int],
    parent_generation: Any,
    site_pages: int,
) -> SprawlVerdict | None:
    """A new page's sprawl verdict (see the module docstring), None when it links back
    (or too few new links to say). `site_pages`: the pages of its site judged so far."""
    own = candidate_links(page_url, fresh, repeated, config, relinked)
    wide = site_links(page_url, fresh, repeated, config, relinked)
    chained = isinstance(parent_generation, int)
    if wide and not own and not links_its_kind(page_url, wide):
        # Links back nowhere, but to no page of its kind (a tarpit's page of a rare shape;
        # a tree's section linking its pages): it starts no chain, passes a young one on
        # as it came, and advances one that pages of their kind advanced twice already.
        if not chained:
            return None
        if parent_generation < 2:
            return SprawlVerdict(None, parent_generation, wide, [])
    if not own and not wide:
        return None
    generation = sprawl_generation(parent_generation)
    closes = 0 < config.chain <= generation
    outcome = ("sprawl_chain" if closes else "sprawl") if own else None
    # A site's first pages are all new links: a chain there says nothing yet.
    ends = closes and site_pages >= config.chain_site_pages
    # wide holds own (a shape names its site): a chain goes on through any shape.
    marked = wide or own
    if ends:
        # A chain's end is a generator's page, whatever its shape: its pattern closes, so
        # the generator's next way in of that shape is refused at admission.
        return SprawlVerdict("sprawl_chain", generation, [], marked)
    return SprawlVerdict(outcome, generation, marked, [])


def sprawl_generation(parent_generation: Any) -> int:
    """A sprawl page's generation from its request's SPRAWL_GEN_META (1 without one)."""
    return parent_generation + 1 if isinstance(parent_generation, int) else 1


def log_chain_end(page_url: str, dropped: int) -> None:
    """One INFO line for a site's first chain end (links not followed: an operator who
    misses a section sees why), DEBUG for the rest."""
    site = _link_site(page_url)
    level = logging.DEBUG
    if site not in _LOGGED_SITES and len(_LOGGED_SITES) < _MAX_LOGGED_SITES:
        _LOGGED_SITES.add(site)
        level = logging.INFO
    logger.log(
        level,
        "Sprawl chain ends at %s: %d new links on its site not followed (a third page in a"
        " row linking only new pages of its kind and nothing back: a generator's); later"
        " ones on %s are logged at DEBUG",
        page_url,
        dropped,
        site,
    )


class SitePages:
    """Pages this worker judged per site (registered domain and port; the site counted
    least lately forgotten past `capacity`): a chain ends only on a site past
    PRIORITY_SPRAWL_CHAIN_SITE_PAGES of them."""

    def __init__(self, capacity: int = 10_000) -> None:
        self.capacity = capacity
        self._pages: OrderedDict[str, int] = OrderedDict()

    def count(self, page_url: str) -> int:
        """One more page of `page_url`'s site; its pages so far, this one included."""
        site = _link_site(page_url)
        n = self._pages.get(site, 0) + 1
        keep_newest(self._pages, site, n, self.capacity)
        return n
