"""URL patterns: the unit that trap feedback counts, demotes and closes.

A trap is a URL space one template generates without end: calendar months, facet
combinations, session ids, random links on a "not found" page. Its URLs differ in
numbers, tokens and query values, not in shape, so a pattern abstracts exactly those:

    http://shop.test/shop/shoes/?color=red&size=m  ->  shop.test/shop/shoes/?color&size
    http://h.test/calendar/2024/01                 ->  h.test/calendar/<N>/<N>
    http://h.test/s/3f2a9c0e4b5d6a7f8e9d/view      ->  h.test/s/<H>/view

Memory is bounded per host (PRIORITY_PATTERNS_PER_HOST, counted in the admit script):
a host whose paths carry word slugs would otherwise cost a pattern per page. Past the
cap a URL counts under its coarse pattern (host, first path segment, "has a query"),
and past twice the cap under the host's catch-all. `UrlPatterns` carries all three;
the Lua side (frontier/lua/traps.lua) picks the finest one the host has room for, and
reports resolve the same way, so a page's outcome lands where its admission was counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from extensions.admission.filters import split_absolute

_DIGITS = re.compile(r"[0-9]+")
# Long hex runs (hashes, UUID parts, session tokens): a digit and a letter a-f, 16+ chars.
_HEX_TOKEN = re.compile(
    r"(?<![0-9A-Za-z])(?=[0-9a-fA-F-]*[0-9])(?=[0-9a-fA-F-]*[a-fA-F])[0-9a-fA-F-]{16,}(?![0-9A-Za-z])"
)
# A path segment this long is a token (a growing slug, an encoded blob), not a name.
_LONG_SEGMENT = 32


@dataclass(frozen=True)
class UrlPatterns:
    """The patterns of one URL, finest first; `path_key` names its path for the facet cap
    ('' when the URL has no query)."""

    fine: str
    coarse: str
    host_wide: str
    path_key: str


def path_template(path: str) -> str:
    """Hex tokens -> <H>, digit runs -> <N>, overlong segments -> <L>, and a run of
    segments with one stem (a/a/a, p<N>/p<N>, more/more<N>/more<N>) -> its first + "+":
    a path that grows by a segment per hop stays one pattern."""
    out = _DIGITS.sub("<N>", _HEX_TOKEN.sub("<H>", path))
    segments: list[str] = []
    stem = None
    for segment in out.split("/"):
        if len(segment) > _LONG_SEGMENT:
            segment = "<L>"
        this = segment.replace("<N>", "")
        if segments and this == stem and segment:
            if not segments[-1].endswith("+"):
                segments[-1] += "+"
            continue
        stem = this
        segments.append(segment)
    return "/".join(segments)


def query_names(query: str) -> list[str]:
    """Sorted distinct parameter names (values dropped; the canonicalizer sorted them)."""
    names = {part.partition("=")[0] for part in query.split("&") if part}
    return sorted(_DIGITS.sub("<N>", name) for name in names)


@dataclass(frozen=True, slots=True)
class UrlParts:
    """A canonical URL split once for admission (patterns, prioritizer)."""

    host: str
    path: str  # "/" when the URL has none
    query: str
    names: frozenset[str]  # its parameter names, lower-cased


def split_url(url: str) -> UrlParts:
    host, path, query = split_absolute(url)
    path = path or "/"
    names = frozenset(p.partition("=")[0].lower() for p in query.split("&") if p)
    return UrlParts(host, path, query, names)


def url_patterns(url: str | UrlParts) -> UrlPatterns:
    """The patterns of a canonical URL; a URL without a path counts under the host's "/"."""
    parts = split_url(url) if isinstance(url, str) else url
    host, path, query = parts.host, parts.path, parts.query
    template = path_template(path)
    suffix = "?" + "&".join(query_names(query)) if query else ""
    first = template.split("/", 2)[1] if template.count("/") >= 1 else ""
    return UrlPatterns(
        fine=f"{host}{template}{suffix}",
        coarse=f"{host}/{first}/*{'?' if query else ''}",
        host_wide=f"{host}/*",
        path_key=f"{host}{template}" if query else "",
    )
