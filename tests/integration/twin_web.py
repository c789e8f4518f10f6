"""A one-host web of near-duplicate pages, for crawls that must see duplicates.

The shared test web (scripts/testweb) renders distinct prose on every page.
Until it grows near-duplicate pages, this small server (a thread of the test
process, on its own 127.x address) serves one article of the furniture corpus
(tests/corpus/furniture_corpus.py) in four versions, an unrelated article of
the other corpus and a text document:

    /doc          the article (corpus base page, a blog layout)
    /doc-updated  another "updated" date           (near duplicate)
    /doc-all      date, ad, footer, counters and ~2% words edited (near duplicate)
    /doc-copy     /doc with different whitespace (exact duplicate: same content_hash)
    /other        an unrelated article of the corpus
    /notes.txt    plain text
The corpus pages link to /ref and /lib, which answer the same 404 body
(an exact duplicate pair too). Every request is logged.
"""

from __future__ import annotations

import functools

from tests.corpus import furniture_corpus
from tests.corpus.neardup_corpus import build_corpus
from tests.integration.one_host_web import OneHostWeb

HOST = "twins.test"
ADDRESS = "127.0.31.1"
GROUP = ("/doc", "/doc-updated", "/doc-all", "/doc-copy")


@functools.cache
def pages() -> dict[str, tuple[str, bytes]]:
    """path -> (content type, body)."""
    article = {p.variant: p.html for p in furniture_corpus.build_corpus() if p.base == 0}
    other = next(p.html for p in build_corpus() if p.base == 0 and p.variant == "base")
    root = "".join(f'<li><a href="{path}">{path}</a></li>' for path in [*GROUP, "/other"])
    html = "text/html; charset=utf-8"
    notes = " ".join(f"Note {i}: the crawler keeps plain text documents too." for i in range(40))
    return {
        "/": (html, f"<html><body><ul>{root}<li><a href=/notes.txt>notes</a></li></ul>".encode()),
        "/doc": (html, article["base"].encode()),
        "/doc-updated": (html, article["timestamp"].encode()),
        "/doc-all": (html, article["all"].encode()),
        "/doc-copy": (html, article["base"].replace(" ", " \n ").encode()),
        "/other": (html, other.encode()),
        "/notes.txt": ("text/plain; charset=utf-8", notes.encode()),
    }


class TwinWeb(OneHostWeb):
    """The twin site on ADDRESS:<free port>; use as a context manager."""

    HOST = HOST
    ADDRESS = ADDRESS

    def answer(self, path: str) -> tuple[str, bytes] | None:
        return pages().get(path)
