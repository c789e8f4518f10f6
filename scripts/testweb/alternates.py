"""Alternate views: every real page also served under query parameters of its own.

CMSs give each article a handful of other URLs that show the same article: WordPress'
`?replytocom=<comment>` (one per comment: the article with a reply form; the classic trap
that multiplies a blog's crawl by its comment count), a print view (`?print=1`, the text
without the site's links), share buttons that answer the page itself (`?share=twitter`),
and a wiki's `?action=edit` and `?action=history`, whose history lists old revisions
(`?oldid=<n>`: the article with one paragraph as it was). None ends, none is new text:
a crawler that follows them fetches every article 3-9 times. Each style is its own
parameter name, so a crawler cannot pass by knowing one, and the values are numbers,
words and tokens: "replytocom", "print", "share", "history". Real pages (/page/N, the
guide's) link their own views; the views are kind "alternate" (a trap kind).
"""

from __future__ import annotations

import dataclasses
import html
import re
from urllib.parse import parse_qsl

from .prose import render, seeded_rng, sentence
from .routes import HTML, Link, Route, UrlFor
from .spec import HostSpec

COMMENTS = (2, 5)  # comments (reply links) per article, drawn per page
SHARES = ("twitter", "facebook", "email")
REVISIONS = 3  # old revisions a history lists
# The query parameter each style's views carry (what marks a request as a view).
PARAMS = {
    "replytocom": ("replytocom",),
    "print": ("print",),
    "share": ("share",),
    "history": ("action", "oldid"),
}


class Alternates:
    """The alternate views HostSpec.alternates asks for on one host's real pages."""

    def __init__(self, h: HostSpec, url: UrlFor, seed: int) -> None:
        self.h, self.url, self.seed = h, url, seed
        self.names = {name for style in h.alternates for name in PARAMS[style]}

    def links(self, bare: str) -> list[Link]:
        """The views a real page at `bare` links: its reply links, print and share buttons,
        edit and history tabs."""
        out: list[str] = []
        styles = self.h.alternates
        if "replytocom" in styles:
            out += [f"?replytocom={c}" for c in self._comments(bare)]
        if "print" in styles:
            out.append("?print=1")
        if "share" in styles:
            out += [f"?share={s}" for s in SHARES]
        if "history" in styles:
            out += ["?action=edit", "?action=history"]
        return [Link(self.url(bare + q), bare + q) for q in out]

    def view(self, bare: str, query: str, page: Route) -> Route | None:
        """The view `query` asks for of the real page `page` at `bare`; None when the query
        names none (the page itself, a tracking alias)."""
        pairs = dict(parse_qsl(query, True))
        if not self.names.intersection(pairs):
            return None
        if "replytocom" in pairs and "replytocom" in self.names:
            line = f"Leave a reply to comment {pairs['replytocom']}. Cancel reply."
            return self._copy(bare, query, page, page.links, line)
        if "print" in pairs and "print" in self.names:
            return self._copy(bare, query, page, (), "Printed from the web.")
        if "share" in pairs and "share" in self.names:
            return self._copy(bare, query, page, page.links, "")
        return self._wiki(bare, query, page, pairs)

    def _wiki(self, bare: str, query: str, page: Route, pairs: dict[str, str]) -> Route | None:
        action, oldid = pairs.get("action"), pairs.get("oldid", "")
        if oldid.isdigit():  # an old revision: one paragraph as it was
            line = f"This is an old revision of this page, as edited at revision {oldid}."
            return self._copy(bare, query, page, page.links, line, revision=int(oldid))
        if action == "edit":
            return self._copy(bare, query, page, (), "Editing this page. Save changes.")
        if action == "history":
            revisions = self._revisions(bare)
            old = [Link(self.url(f"{bare}?oldid={r}"), f"{bare}?oldid={r}") for r in revisions]
            return dataclasses.replace(page, kind="alternate", links=(*old, *page.links[:1]))
        return None

    def _copy(
        self, bare: str, query: str, page: Route, links: tuple[Link, ...], line: str,
        revision: int = 0,
    ) -> Route:  # fmt: skip
        """The page's own prose and title under this view, `line` added, its links
        `links`; an old revision has its second paragraph in an earlier wording."""
        route = dataclasses.replace(page, kind="alternate", links=links)
        body = render(self.seed, self.h.name, bare, route)
        if revision:
            old = sentence(seeded_rng(self.seed, "revision", self.h.name, bare, revision), 40)
            paragraphs = re.findall(rb"<p>.*?</p>\n", body)
            if len(paragraphs) > 1:
                body = body.replace(paragraphs[1], f"<p>{html.escape(old)}</p>\n".encode(), 1)
        if line:
            at = body.find(b"<ul>")
            body = body[:at] + f"<p>{html.escape(line)}</p>\n".encode() + body[at:]
        return dataclasses.replace(route, body=body, headers=HTML)

    def _comments(self, bare: str) -> list[int]:
        rng = seeded_rng(self.seed, "comments", self.h.name, bare)
        first = rng.randint(100, 99_999)
        return [first + 7 * k for k in range(rng.randint(*COMMENTS))]

    def _revisions(self, bare: str) -> list[int]:
        rng = seeded_rng(self.seed, "revisions", self.h.name, bare)
        return sorted(rng.randint(1_000, 999_999) for _ in range(REVISIONS))
