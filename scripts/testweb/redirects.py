"""Redirect traps: URL spaces whose every URL answers a redirect to a new URL of the space.

A real redirect ends: a moved page, a trailing slash, http to https, a login wall. A
trap's chain never does; each hop is a fresh URL, so a crawler's duplicate filter never
meets one twice, and no page is ever parsed, so no content verdict comes. Scrapy's
REDIRECT_MAX_TIMES (20) ends one chain; every real page that links a new chain start
costs that many requests again. Each style is its own shape, so a crawler cannot pass by
fitting one: "tokens" /go/<16 hex> -> /go/<16 hex>; "counter" /hop/<n> -> /hop/<n+1>
(a number sequence that never ends); "query" /out?u=<12 hex> -> /out?u=<12 hex>;
"bounce" /jump/<12 hex> -> /land?from=<12 hex> -> /jump/<12 hex> (two shapes in turn,
as a tracking hop between two of a site's own pages); "slug" /moved/<w>-<w> ->
/moved/<w>-<w> (a page that moved to a page that moved). Hops are 302s but the
slug style's, which are 301s. The home page links one start per style and every tenth
/page/N one more.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from .generator import SEGMENT_WORDS, tenth_page_rng
from .routes import FamilyHandler, Link, Route, UrlFor
from .spec import HostSpec

# The path each style's handler matches ("query" and "bounce"'s landing check the query).
PATTERNS = {
    "tokens": r"/go/([0-9a-f]{16})",
    "counter": r"/hop/([1-9]\d{0,8})",
    "query": r"/out",
    "bounce": r"/jump/([0-9a-f]{12})|/land",
    "slug": r"/moved/([a-z]+-[a-z]+)",
}
STARTS = {
    "tokens": "/go/5e0c2a9b7d41f386",
    "counter": "/hop/1",
    "query": "/out?u=a41f07c2e9b3",
    "bounce": "/jump/0b7e95c3d2a1",
    "slug": "/moved/river-fern",
}
_HEX = re.compile(r"[0-9a-f]{12}")


def _next(token: str, size: int) -> str:
    """The hop after `token`: a new token of the same size, from the token alone."""
    return hashlib.sha256(token.encode()).hexdigest()[:size]


def _next_slug(slug: str) -> str:
    digest = int(hashlib.sha256(slug.encode()).hexdigest(), 16)
    n = len(SEGMENT_WORDS)
    return f"{SEGMENT_WORDS[digest % n]}-{SEGMENT_WORDS[(digest // n) % n]}"


def _query_value(query: str, name: str) -> str | None:
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key == name and _HEX.fullmatch(value):
            return value
    return None


# The next hop's path from a style's match and query; None when the URL is not the style's.
HOPS: dict[str, Callable[[re.Match[str], str], str | None]] = {
    "tokens": lambda m, q: f"/go/{_next(m.group(1), 16)}",
    "counter": lambda m, q: f"/hop/{int(m.group(1)) + 1}",
    "query": lambda m, q: (v := _query_value(q, "u")) and f"/out?u={_next(v, 12)}",
    "bounce": lambda m, q: (
        f"/land?from={m.group(1)}"
        if m.group(1)
        else (v := _query_value(q, "from")) and f"/jump/{_next(v, 12)}"
    ),
    "slug": lambda m, q: f"/moved/{_next_slug(m.group(1))}",
}
# A fresh chain start per style, drawn from a seeded rng (the real pages' links).
MAKERS = {
    "tokens": lambda rng: f"/go/{rng.getrandbits(64):016x}",
    "counter": lambda rng: f"/hop/{rng.randint(1, 10**6)}",
    "query": lambda rng: f"/out?u={rng.getrandbits(48):012x}",
    "bounce": lambda rng: f"/jump/{rng.getrandbits(48):012x}",
    "slug": lambda rng: f"/moved/{rng.choice(SEGMENT_WORDS)}-{rng.choice(SEGMENT_WORDS)}",
}


class RedirectTraps:
    """The redirect traps HostSpec.redirect_traps asks for on one host."""

    def __init__(self, h: HostSpec, url: UrlFor, seed: int) -> None:
        self.h, self.url, self.seed = h, url, seed

    def table(self) -> list[tuple[str, FamilyHandler]]:
        return [(PATTERNS[style], self._handler(style)) for style in self.h.redirect_traps]

    def entries(self) -> list[str]:
        return [STARTS[style] for style in self.h.redirect_traps]

    def real_paths(self) -> list[str]:
        return []

    def links(self, bare: str) -> list[Link]:
        """A new chain start of each style on every tenth /page/N."""
        rng = tenth_page_rng(bare, self.seed, "redirect trap", self.h.name)
        if rng is None or not self.h.redirect_traps:
            return []
        return [self._link(MAKERS[style](rng)) for style in self.h.redirect_traps]

    def _handler(self, style: str) -> FamilyHandler:
        status = 301 if style == "slug" else 302

        def serve(m: re.Match[str], query: str) -> Route | None:
            hop = HOPS[style](m, query)
            if not hop:
                return None
            return Route("redirect_trap", status, location=self.url(hop), body=b"found\n")

        return serve

    def _link(self, path: str) -> Link:
        return Link(self.url(path), path)
