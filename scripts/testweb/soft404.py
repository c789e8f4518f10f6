"""Soft 404s: unknown paths answered as if they existed (HostSpec.soft404).

Many real servers answer a missing page with 200 and a "not found" template, often with
fresh links (suggestions, related searches) that lead to more missing pages, or redirect
every unknown path home. A crawler that trusts the status fetches them forever; content
(one template) is what gives them away. Real pages of such a host link a few broken paths,
as real sites do, so the crawler meets soft 404s without following a trap first.
"""

from __future__ import annotations

import random
import re

from .prose import WORDS, seeded_rng, sentence, template
from .routes import Link, Route, UrlFor
from .spec import HostSpec

FRESH_LINKS = 3  # made-up links on a "links", "themed" or "chatty" not-found page
CHATTY_WORDS = 40  # words of each of a "chatty" page's two suggestions of its own


class Soft404:
    def __init__(self, h: HostSpec, url: UrlFor, seed: int) -> None:
        self.h, self.url, self.seed = h, url, seed

    def answer(self, bare: str) -> Route:
        """What the host serves at an unknown path."""
        home = (Link(self.url("/"), "/"), "Home")
        style = self.h.soft404
        if style == "redirect":
            return Route("soft404", 302, location=self.url("/"), body=b"found\n")
        if style == "short":
            return template("soft404", "Not found", ["Nothing here."], [home])
        rng = seeded_rng(self.seed, "soft404", self.h.name, bare)
        fresh = [(self._made_up(rng), "You may also like") for _ in range(FRESH_LINKS)]
        if style == "links":
            text = f"The page {bare} does not exist. Try one of these:"
            return template("soft404", "Page not found", [text], [*fresh, home])
        theme = seeded_rng(self.seed, "theme", self.h.name)  # one template per host
        paragraphs = [f"Sorry, we could not find {bare}."]
        paragraphs += [sentence(theme, 25) for _ in range(4)]
        if style == "chatty":  # suggestions of its own on every answer: excerpts, searches
            paragraphs += [f"You might like: {sentence(rng, CHATTY_WORDS)}" for _ in range(2)]
        nav = [(Link(self.url(f"/page/{n}"), f"/page/{n}"), "Popular") for n in range(1, 4)]
        return template(
            "soft404", "Page not found", paragraphs, [home, *nav[: self.h.pages], *fresh]
        )

    def _made_up(self, rng: random.Random) -> Link:
        if rng.random() < 0.5:
            path = f"/{rng.choice(WORDS)}-{rng.choice(WORDS)}"
        else:
            path = f"/item/{rng.randint(1000, 99999)}"
        return Link(self.url(path), path)

    def broken_links(self, bare: str) -> list[Link]:
        """A dead link on every fifth /page/N: a number past the last page or a slug."""
        m = re.fullmatch(r"/page/(\d+)", bare)
        n = int(m.group(1)) if m else 0
        if not n or n % 5:
            return []
        if n % 10 == 0:
            path = f"/page/{self.h.pages + n}"
        else:
            rng = seeded_rng(self.seed, "broken", self.h.name, n)
            path = f"/{rng.choice(WORDS)}-{rng.choice(WORDS)}"
        return [Link(self.url(path), path)]
