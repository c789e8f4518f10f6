"""Generator traps ("tarpits", as Nepenthes and Iocaine serve AI crawlers): an endless URL
space where every page is unique prose and links only to new made-up pages of the space.

The other endless families are templates (near duplicates) or chains a URL rule can see
growing; here every page is paragraphs of random words seeded on the page's own URL, so
no duplicate, near-duplicate or template test catches it, and each page links 2-5 fresh
URLs, not an earlier one: every page has in-degree 1 (two-word names, 9 million of them,
can meet again by chance, a few times in 10,000 pages) and the space never ends. Only a
per-host budget, or noticing that the space only ever widens, holds it. Each style is
its own URL shape so a crawler cannot pass by fitting one: "slugs" /gen/<w>-<w>, "ids"
/item/<5-9 digits>, "tokens" /t/<20 hex>/, "query" /lookup?term=<w>+<w>+<w>, "dirs"
/lib/<w>/<w>.html, "nav", /wander/<w>-<w> whose every page also links the same five
/wander/start-<k> pages (a site menu: the one part of it that repeats), "deep",
/maze/<w>/<w>[/<w>...] of 2-4 words (a path of random depth, as some tarpits serve), and
"root", /<w>-<w>-<w>/ under the root (a tarpit host's own pages, or a blog's permalinks),
and "mixed", /mix/... whose every link takes one of five shapes at random (/mix/<w>-<w>,
/mix/n/<n>/, /mix/<w>/<w>.html, /mix/<12 hex>, /mix/q?ref=<w>&p=<n>): few of a page's
links have its own shape, as an independent adversarial web's tarpits served them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from urllib.parse import parse_qs

from .prose import WORDS, seeded_rng, sentence, template
from .routes import FamilyHandler, Link, Route, UrlFor
from .spec import HostSpec

# Words that spell a path segment as they are: the handlers' [a-z]+ must match every
# name the generator makes (WORDS are all lower-case letters today; this keeps it so).
SEGMENT_WORDS = tuple(w for w in WORDS if re.fullmatch(r"[a-z]+", w))
_KNOWN = frozenset(SEGMENT_WORDS)
NAV_STARTS = tuple(f"/wander/start-{k}" for k in range(1, 6))
FAN_OUT = (2, 5)  # new pages each page links, chosen per page by its own rng
HOME_SHARE = 0.5  # pages that also link "/", as a real site's header does on some

# The path each style's handler matches (the query style's term is checked apart).
PATTERNS = {
    "slugs": r"/gen/([a-z]+)-([a-z]+)",
    "ids": r"/item/[1-9]\d{4,8}",
    "tokens": r"/t/[0-9a-f]{20}/",
    "query": r"/lookup",
    "dirs": r"/lib/([a-z]+)/([a-z]+)\.html",
    "nav": r"/wander/(?:start-[1-5]|([a-z]+)-([a-z]+))",
    "deep": r"/maze(?:/[a-z]+){2,4}",
    "root": r"/([a-z]+)-([a-z]+)-([a-z]+)/",
    "mixed": r"/mix/(?:([a-z]+)-([a-z]+)|n/[1-9]\d{4,8}/|([a-z]+)/([a-z]+)\.html|[0-9a-f]{12}|q)",
}
ENTRIES = {
    "slugs": "/gen/crawler-frontier",
    "ids": "/item/48213",
    "tokens": "/t/4f1c9a07d2b35e6680ab/",
    "query": "/lookup?term=polite+fetch+queue",
    "dirs": "/lib/archive/river.html",
    "nav": NAV_STARTS[0],
    "deep": "/maze/river/fern",
    "root": "/river-fern-ember/",
    "mixed": "/mix/river-fern",
}


def _words(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(SEGMENT_WORDS) for _ in range(n)]


def _number(rng: random.Random) -> int:
    digits = rng.randint(5, 9)  # the length first: each length as likely as another
    return rng.randint(10 ** (digits - 1), 10**digits - 1)


# The shapes a "mixed" page's links take, one drawn per link.
_MIXED: tuple[Callable[[random.Random], str], ...] = (
    lambda rng: "/mix/{}-{}".format(*_words(rng, 2)),
    lambda rng: f"/mix/n/{_number(rng)}/",
    lambda rng: "/mix/{}/{}.html".format(*_words(rng, 2)),
    lambda rng: f"/mix/{rng.getrandbits(48):012x}",
    lambda rng: f"/mix/q?ref={_words(rng, 1)[0]}&p={rng.randint(1, 999)}",
)


# A new made-up page of each style: its path (and query), drawn from `rng`.
MAKERS: dict[str, Callable[[random.Random], str]] = {
    "slugs": lambda rng: "/gen/{}-{}".format(*_words(rng, 2)),
    "ids": lambda rng: f"/item/{_number(rng)}",
    "tokens": lambda rng: f"/t/{rng.getrandbits(80):020x}/",
    "query": lambda rng: "/lookup?term=" + "+".join(_words(rng, 3)),
    "dirs": lambda rng: "/lib/{}/{}.html".format(*_words(rng, 2)),
    "nav": lambda rng: "/wander/{}-{}".format(*_words(rng, 2)),
    "deep": lambda rng: "/maze/" + "/".join(_words(rng, rng.randint(2, 4))),
    "root": lambda rng: "/{}-{}-{}/".format(*_words(rng, 3)),
    "mixed": lambda rng: rng.choice(_MIXED)(rng),
}


def tenth_page_rng(bare: str, seed: int, *salt: str) -> random.Random | None:
    """A rng seeded on every tenth /page/N (the families' ways in from real pages), else
    None."""
    m = re.fullmatch(r"/page/(\d+)", bare)
    if m is None or int(m.group(1)) % 10:
        return None
    return seeded_rng(seed, *salt, m.group(1))


def _term(query: str) -> str | None:
    """The query style's page: /lookup?term=w+w+w in one spelling (a + or a %20 between
    the words; other parameters, such as a session token, left out), None if malformed."""
    terms = parse_qs(query).get("term", [""])[-1].split(" ")
    if len(terms) != 3 or not all(t in _KNOWN for t in terms):
        return None
    return "/lookup?term=" + "+".join(terms)


def _mixed_query(query: str) -> str | None:
    """The mixed style's /mix/q page in one spelling (ref=<w>&p=<n>), None if malformed."""
    args = parse_qs(query)
    ref, p = args.get("ref", [""])[-1], args.get("p", [""])[-1]
    if ref not in _KNOWN or not p.isdigit():
        return None
    return f"/mix/q?ref={ref}&p={int(p)}"


def page_of(style: str, m: re.Match[str], query: str) -> str | None:
    """The generator page `m` (and `query`) names, in the spelling its content is seeded
    on; None when the URL is not one the style could have made."""
    if style == "query":
        return _term(query)
    if style == "mixed" and m.group(0) == "/mix/q":
        return _mixed_query(query)
    if style == "deep":  # a path of 2-4 words, each a segment
        return m.group(0) if all(w in _KNOWN for w in m.group(0).split("/")[2:]) else None
    if not all(g in _KNOWN for g in m.groups() if g is not None):
        return None
    return m.group(0)  # path styles ignore the query: a session token is the same page


class Generator:
    """The generator traps HostSpec.generators asks for on one host."""

    def __init__(self, h: HostSpec, url: UrlFor, seed: int) -> None:
        self.h, self.url, self.seed = h, url, seed

    def table(self) -> list[tuple[str, FamilyHandler]]:
        return [(PATTERNS[style], self._handler(style)) for style in self.h.generators]

    def entries(self) -> list[str]:
        return [ENTRIES[style] for style in self.h.generators]

    def real_paths(self) -> list[str]:
        return []

    def links(self, bare: str) -> list[Link]:
        """One made-up page of each style on every tenth /page/N: ways in that are not
        the home page's fixed entries."""
        rng = tenth_page_rng(bare, self.seed, "generator entry", self.h.name)
        if rng is None or not self.h.generators:
            return []
        return [self._link(MAKERS[style](rng)) for style in self.h.generators]

    def _handler(self, style: str) -> FamilyHandler:
        def serve(m: re.Match[str], query: str) -> Route | None:
            page = page_of(style, m, query)
            return None if page is None else self._page(style, page)

        return serve

    def _page(self, style: str, page: str) -> Route:
        # One rng for words and links alike: the page's bytes follow from its URL alone.
        rng = seeded_rng(self.seed, "generator", self.h.name, page)
        paragraphs = [sentence(rng, rng.randint(30, 60)) for _ in range(rng.randint(3, 5))]
        fresh = [MAKERS[style](rng) for _ in range(rng.randint(*FAN_OUT))]
        anchors = [(self._link(path), sentence(rng, 2)) for path in fresh]
        if style == "nav":
            anchors += [(self._link(p), f"Start {k}") for k, p in enumerate(NAV_STARTS, 1)]
        if rng.random() < HOME_SHARE:
            anchors.append((self._link("/"), "Home"))
        return template("generator", sentence(rng, 4).rstrip("."), paragraphs, anchors)

    def _link(self, path: str) -> Link:
        return Link(self.url(path), path)
