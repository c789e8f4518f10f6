"""What a test-web resource is, before it is rendered (pure data and small helpers).

Kept apart from ``sites.py`` so the page generator, the prose renderer and the
expected-page walk share one vocabulary of resources without importing each other.
"""

from __future__ import annotations

import functools
import gzip
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from .spec import HostSpec, StatusOverride

TRAP_ENTRIES = ("/calendar/2024/01", "/trap/a")
LAST_MODIFIED = "Mon, 01 Jan 2024 00:00:00 GMT"
UTM_QUERY = "utm_source=x&utm_medium=y"
SITEMAP_INDEX = "/sitemap_index.xml.gz"
ORPHAN = "/orphan"
# Route kinds of the trap families (Site.is_trap) and of linked non-HTML files (is_non_page).
TRAP_KINDS = frozenset(
    {
        "trap",
        "facet",
        "soft404",
        "session",
        "calendar",
        "growth",
        "longurl",
        "subdomain",
        "generator",
        "redirect_trap",
        "alternate",
    }
)
NON_PAGE_KINDS = frozenset({"source", "file"})
# Trap kinds whose pages can list content of their own (WebSpec.trap_prose): not soft 404s
# (one "not found" look), not session copies (a real page under another URL) and not
# generator pages (all their prose is their own already).
OWN_PROSE_KINDS = frozenset({"trap", "facet", "calendar", "growth", "longurl"})
HTML = (("Content-Type", "text/html; charset=utf-8"),)


@dataclass(frozen=True)
class Link:
    target: str  # absolute URL the href resolves to (what Scrapy/browsers compute)
    href: str  # attribute text as written in the HTML


@dataclass(frozen=True)
class Route:
    """Abstract resource: enough to render it and to walk the link graph."""

    kind: str  # page | redirect | robots | missing | override | a TRAP_KINDS | NON_PAGE_KINDS
    status: int = 200
    title: str = ""
    links: tuple[Link, ...] = ()
    location: str | None = None
    base_href: str | None = None
    body: bytes | None = None  # fixed body (robots, errors); pages render lazily
    headers: tuple[tuple[str, str], ...] = ()
    size_kb: int = 0  # > 0: pad the rendered body with prose to about this size


# A trap family's handler: (match on the path, the query string) -> its route, or None
# when the path is not one it serves. UrlFor spells a path of the family's own host.
FamilyHandler = Callable[[re.Match[str], str], "Route | None"]
UrlFor = Callable[[str], str]


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    version: int | None = None  # edition of a changing page (HostSpec.change_rates)


def override_for(spec: HostSpec, path: str) -> StatusOverride | None:
    # Exact path-with-query first, so "/x?a=1" can fail while "/x" works.
    overrides = spec.status_overrides
    return overrides.get(path) or overrides.get(urlsplit(path).path or "/")


def original(path: str) -> str:
    """The page a near-duplicate /copy/N repeats (/page/1); any other path itself."""
    return "/page/1" if path.startswith("/copy/") else path


@functools.cache
def gzip_bomb(mib: int) -> Route:
    """A small gzip body that inflates to `mib` MiB of zeros (built once per size)."""
    body = gzip.compress(b"\0" * (mib << 20), compresslevel=9, mtime=0)  # same bytes each run
    headers = (("Content-Type", "text/html"), ("Content-Encoding", "gzip"))
    return Route("bomb", 200, body=body, headers=headers)


def text_headers(extra: dict[str, str]) -> dict[str, str]:
    return {"Content-Type": "text/plain; charset=utf-8", **extra}


def plain() -> tuple[tuple[str, str], ...]:
    return (("Content-Type", "text/plain; charset=utf-8"),)


def with_param(url: str, name: str, value: str) -> str:
    """`url` (absolute or relative) with name=value appended to its query, fragment kept."""
    head, sep, fragment = url.partition("#")
    return f"{head}{'&' if '?' in head else '?'}{name}={value}{sep}{fragment}"
