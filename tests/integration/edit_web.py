"""A one-host web whose pages are edited between two crawls (re-crawl change tests).

Like twin_web.py, a thread of the test process on its own 127.x address. Every
page exists in two revisions (tests/corpus/furniture_corpus.revisions); the
test flips ``revision`` between crawls. No validators (no ETag/Last-Modified),
so every re-fetch is a full 200 the content pipeline must judge:

    /sentence-<i>   the re-fetch gains one sentence in the main text (changed)
    /section-<i>    the re-fetch gains a ~300-word section          (changed)
    /furniture-<i>  new ad, footer, counters and date, same text     (unchanged)
    /none-<i>       byte-identical                                   (unchanged)

Text edits are served on all four layouts of the furniture corpus, furniture
changes on the three whose furniture is marked up as such (class names, tags):
on the "plain" layout nothing tells a byline from a sentence, and a new date
there is a change of the main text (README, "What happens to a fetched page").
"""

from __future__ import annotations

import functools

from tests.corpus.furniture_corpus import CHANGES, SITES, revisions
from tests.integration.one_host_web import OneHostWeb

HOST = "edits.test"
ADDRESS = "127.0.31.2"
MARKED_UP = ("blog", "news", "docs")


@functools.cache
def pages() -> dict[str, tuple[bytes, bytes]]:
    """path -> (first revision, second revision)."""
    out: dict[str, tuple[bytes, bytes]] = {}
    n = 0
    for change in CHANGES:
        sites = SITES if change in ("sentence", "section") else MARKED_UP
        for i, site in enumerate(sites):
            first, second = revisions(n, change, site)
            out[f"/{change}-{i}"] = (first.encode(), second.encode())
            n += 1
    index = "".join(f'<li><a href="{path}">{path}</a></li>' for path in out)
    root = f"<html><body><h1>Edits</h1><ul>{index}</ul></body></html>".encode()
    out["/"] = (root, root)
    return out


class EditWeb(OneHostWeb):
    """The edited site on ADDRESS:<free port>; ``revision`` (0 or 1) picks the version."""

    HOST = HOST
    ADDRESS = ADDRESS

    def __init__(self) -> None:
        super().__init__()
        self.revision = 0

    def answer(self, path: str) -> tuple[str, bytes] | None:
        found = pages().get(path)
        return None if found is None else ("text/html; charset=utf-8", found[self.revision])
