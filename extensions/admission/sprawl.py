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
PRIORITY_TRAP_SPRAWL_AFTER. A page that links back, or whose marked links another page
had linked (settled), breaks the chain: its links carry no generation.

Not caught: a generator whose pages also link back to a few earlier pages of its own
(as a real section does), or one whose pages link only pages of another shape (/a/
pages to /b/ ones and back: counting every shape would make a shop's category pages,
new products and a menu, sprawl); only the host budget bounds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from extensions.admission.domains import registered_domain
from extensions.config import Setting, Table, at_least

# A sprawl page's marked links: its generation (1 for a page no sprawl page's link led to).
SPRAWL_GEN_META = "frontier_sprawl_gen"
SPRAWL_OUTCOMES = frozenset(("sprawl", "sprawl_chain"))
# An extension is the last segment's text after its last dot when at most this long.
_MAX_EXTENSION = 6


@dataclass(frozen=True)
class SprawlConfig:
    min_links: int  # PRIORITY_SPRAWL_MIN_LINKS: own-shape links that make a candidate; 0 off
    menu_pages: int  # PRIORITY_SPRAWL_MENU_PAGES: a repeat linked again this often is menu
    chain: int  # PRIORITY_SPRAWL_CHAIN: the generation whose sprawl page closes; 0 off


SPRAWL = Table(
    SprawlConfig,
    Setting("PRIORITY_SPRAWL_MIN_LINKS", "min_links", int, at_least(0)),
    Setting("PRIORITY_SPRAWL_MENU_PAGES", "menu_pages", int, at_least(2)),
    Setting("PRIORITY_SPRAWL_CHAIN", "chain", int, at_least(0)),
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
    if config.min_links <= 0 or len(fresh) < config.min_links:
        return []
    shape = link_shape(page_url)
    # The few fresh links first: most pages have fewer of its shape than min_links, and
    # their many repeats (navigation) then cost no shape at all.
    own = [url for url in fresh if link_shape(url) == shape]
    if len(own) < config.min_links:
        return []
    menu = config.menu_pages
    if any(relinked(url) < menu and link_shape(url) == shape for url in repeated):
        return []
    return own


def sprawl_generation(parent_generation: Any) -> int:
    """A sprawl page's generation from its request's SPRAWL_GEN_META (1 without one)."""
    return parent_generation + 1 if isinstance(parent_generation, int) else 1


def sprawl_outcome(generation: int, config: SprawlConfig) -> str:
    """A sprawl page's outcome: "sprawl_chain" from generation config.chain on."""
    return "sprawl_chain" if 0 < config.chain <= generation else "sprawl"
