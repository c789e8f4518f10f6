"""Deterministic prose and HTML for test-web pages.

Every word comes from an RNG seeded on (spec seed, host, path[, version]), so a page's
bytes are identical across runs and processes, and a changing page's new version is new
text (as a rewritten article), not a new timestamp.
"""

from __future__ import annotations

import hashlib
import html
import random
from collections.abc import Sequence
from urllib.parse import urlsplit

from .routes import HTML, Link, Route, original

_WORD_TEXT = (
    "crawler frontier polite fetch robots queue host address latency budget delay "
    "archive river mountain signal garden lantern harbor meadow copper violet orbit "
    "thunder pebble canyon velvet ember glacier willow falcon quartz meridian saffron "
    "tundra beacon cobalt prairie nectar summit drift marble lagoon cinder aurora fern "
    "the a of and to in is that for on with as by at from quietly slowly often never "
    "always carefully gently bright hidden ancient modern distant"
)
_SYLLABLES = tuple(c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou"))


def _vocabulary() -> tuple[str, ...]:
    """The base words plus 3,000 deterministic pseudo-words: distinct pages must share
    few words, as real prose does, or near-duplicate detection sees twins everywhere."""
    rng = random.Random(1234)
    made = {"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(3000)}
    return tuple(_WORD_TEXT.split()) + tuple(sorted(made))


WORDS = _vocabulary()


def seeded_rng(*parts: object) -> random.Random:
    # hashlib, not hash(): str hashing is randomised per process.
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def sentence(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n_words)]
    return " ".join(words).capitalize() + "."


def _paragraphs(rng: random.Random, seed: int, host: str, bare: str, size_kb: int) -> list[str]:
    paragraphs = [sentence(rng, rng.randint(30, 60)) for _ in range(rng.randint(2, 4))]
    # A changing counter line, as on real sites: a near-duplicate /copy/N differs from
    # its original only here, so its bytes differ but its visible words do not.
    minutes = seeded_rng(seed, "stamp", host, bare).randint(1, 59)
    paragraphs.append(f"Updated {minutes} minutes ago.")
    if size_kb:
        # A 64 KiB block of prose, repeated: megabytes render in milliseconds.
        block: list[str] = []
        while sum(map(len, block)) < 64 * 1024:
            block.append(sentence(rng, 80))
        size = sum(map(len, block)) + len(block) * 7  # "<p></p>" around each
        paragraphs += block * -(-size_kb * 1024 // size)  # ceil: at least size_kb
    return paragraphs


def render(seed: int, host: str, path: str, route: Route, version: int = 0) -> bytes:
    """The HTML of a page or trap route: title, prose, then its links as a list."""
    bare = urlsplit(path).path
    # A new version of a changing page is new prose (as a rewritten article).
    edition = (version,) if version else ()
    rng = seeded_rng(seed, "prose", host, original(bare), *edition)
    paragraphs = _paragraphs(rng, seed, host, bare, route.size_kb)
    title = html.escape(f"{route.title}: {sentence(rng, 3)}")
    base = f'<base href="{html.escape(route.base_href)}">' if route.base_href else ""
    items = "".join(
        f'<li><a href="{html.escape(link.href)}">{html.escape(sentence(rng, 2))}</a></li>\n'
        for link in route.links
    )
    prose = "".join(f"<p>{html.escape(p)}</p>\n" for p in paragraphs)
    doc = (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>{base}'
        f"</head>\n<body><h1>{title}</h1>\n{prose}<ul>\n{items}</ul></body></html>\n"
    )
    return doc.encode()


def template(
    kind: str, title: str, paragraphs: Sequence[str], anchors: Sequence[tuple[Link, str]]
) -> Route:
    """A templated page (calendar day, soft 404, trap level): fixed words around a few
    values, so pages of one template are near duplicates of each other, as on real sites."""
    items = "".join(
        f'<li><a href="{html.escape(link.href)}">{html.escape(label)}</a></li>\n'
        for link, label in anchors
    )
    prose = "".join(f"<p>{html.escape(p)}</p>\n" for p in paragraphs)
    head = html.escape(title)
    doc = (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{head}</title></head>\n'
        f"<body><h1>{head}</h1>\n{prose}<ul>\n{items}</ul></body></html>\n"
    )
    links = tuple(link for link, _ in anchors)
    return Route(kind, 200, title=title, links=links, body=doc.encode(), headers=HTML)


def with_own_prose(body: bytes, seed: int, host: str, path: str, words: int) -> bytes:
    """`body` with a paragraph of `words` words of its own (seeded on the whole path and
    query) before its link list: a trap page that lists its own events or products."""
    rng = seeded_rng(seed, "own prose", host, path)
    paragraph = f"<p>{html.escape(sentence(rng, words))}</p>\n".encode()
    at = body.find(b"<ul>")
    at = at if at >= 0 else body.rfind(b"</body>")
    return body[:at] + paragraph + body[at:] if at >= 0 else body + paragraph
