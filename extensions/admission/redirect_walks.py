"""Redirect walks: a redirect chain that keeps landing on new URLs of its own shape.

Why: a real redirect ends in a hop or two (a moved page, a trailing slash, http to
https, a login wall). A trap's chain never does: /go/<token> answers a redirect to
another /go/<token>, /hop/<n> to /hop/<n+1>, and each hop is a URL nobody fetched, so
URL-seen never meets one twice, and no page is parsed, so no content verdict comes.
Only Scrapy's REDIRECT_MAX_TIMES (20) ended a chain, and every real page that linked a
new start cost 21 requests again: 1,560 of 2,504 requests on traps() with five such
styles (bench/README.md, "Redirect traps").

A chain URL's **shape** is its fine URL pattern and its families (admission/patterns.py:
a token, a number, a slug's last name abstracted). A redirect target is **in shape**
with the chain's earlier URLs (Scrapy's meta["redirect_urls"]) that share a shape with
it and are another document (not the same URL but for its scheme, "www." or trailing
slash). Two outcomes follow:

- admission refuses a target with PRIORITY_REDIRECT_WALK - 1 or more in-shape URLs
  before it in its chain (frontier/rejected/redirect_walk): each chain fetches at most
  that many URLs of one shape (3: a page moved twice still arrives; a bounce between two
  shapes, /jump/<t> -> /land?from=<t> -> /jump/<t'>, fetches 3 of each);
- a hop that was itself reached in shape and redirects in shape again reports the
  outcome "redirect_walk" (frontier/middleware.py), bad for its pattern: after
  PRIORITY_TRAP_MIN_PAGES such hops the pattern closes and the real pages' links to new
  chain starts are refused at admission. A single moved page (/docs/v1/x -> /docs/v2/x)
  is never a walk.
"""

from __future__ import annotations

from collections.abc import Sequence

from extensions.admission.patterns import families, url_patterns

# Scrapy's RedirectMiddleware: the URLs a redirected request's chain passed, in order.
CHAIN_META = "redirect_urls"


def shapes(url: str) -> frozenset[str]:
    """A URL's fine pattern and its families."""
    p = url_patterns(url)
    return frozenset((p.fine, *families(p.family)))


def _document(url: str) -> str:
    """The URL without what a canonicalizing redirect changes: scheme, "www.", a
    trailing slash, case."""
    rest = url.partition("://")[2].lower()
    rest = rest.removeprefix("www.")
    return rest[:-1] if rest.endswith("/") else rest


def in_shape(url: str, chain: Sequence[str]) -> int:
    """How many URLs of `chain` share a shape with `url` and are another document."""
    mine, doc = shapes(url), _document(url)
    return sum(1 for u in chain if _document(u) != doc and not mine.isdisjoint(shapes(u)))


def walks_in_place(url: str, target: str, chain: Sequence[str]) -> bool:
    """A hop of a redirect walk: `url` (reached through `chain`) was itself reached in
    shape and redirects to another document `target` in shape with it or its chain (not
    its own https:// or trailing-slash spelling)."""
    if not chain or _document(target) == _document(url) or in_shape(url, chain) == 0:
        return False
    return in_shape(target, [*chain, url]) > 0
