"""Learned noise parameters: query parameters a host's duplicates show to be irrelevant.

URL_SESSION_PARAMS and URL_TRACKING_PARAMS name the parameters every site uses for
sessions and tracking; a site's own (`?visit=17`, `?ref=side2`, `?s=9f3a`) are only
known by their effect: the same page comes back under URLs that differ in that
parameter alone. The content pipeline reports each duplicate whose original has the
same host and path (`differing_values`); once duplicates showed PRIORITY_NOISE_AFTER
distinct values of one (host, parameter), it is learned crawl-wide (G:noise_params, read
by every worker with the blocklist), and admission drops it from that host's URLs
(`strip_params`): its variants collapse onto one URL, which URL-seen admits once.
Dispatch does the same to variants queued before the parameter was learned.

Near duplicates teach too, with more evidence: a view a CMS adds to a page (WordPress'
`?replytocom=<comment>`: the post with a reply form; a print view; a wiki's history tab)
is the page's main text plus a line, 0.86-1.0 alike on the test web's pages, never the
same text, so the rule above let every one of them through (3 per page and template, 8%
of all requests over 30 webs dealt at random). A near duplicate (NOISE_NEAR_RESEMBLANCE
in the content pipeline) counts for a parameter only when its URL *adds* it to a page
that has none (`added_values`: not a category listing beside another category), and the
parameter is learned once such duplicates showed PRIORITY_NOISE_AFTER distinct values on
NOISE_NEAR_PATHS distinct paths: one listing's variants, however alike, teach nothing. A
value that near duplicates showed on NOISE_NEAR_PATHS paths is learned as itself
("name=value": `?print=1`, `?action=history`, a `?tab=overview` that is the page's
default), its parameter's other values kept (`?tab=reviews` is another text).

Distinct values, not duplicates: a parameter's default value is a duplicate of the page
without it (`?page=1` of a listing, `?lang=en`, `?category=all`), again and again for
every listing, while its other values are other pages. Counting duplicates learned
"page" as noise on a shop whose category listings each had a `?page=1` copy, and every
later page collapsed onto the listing: its products past the first page were never
reached (tests/integration/test_shop_categories.py). A session token or a tracking
stamp shows a new value in nearly every duplicate. Paging and section parameters
(url_params.py) are never noise, whatever their duplicates show.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from extensions.admission.filters import host_of
from extensions.admission.url_params import PLACE_PARAMS
from extensions.config import Setting, Table, at_least, read

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


@dataclass(frozen=True)
class NoiseConfig:
    after: int  # distinct values duplicates showed of (host, parameter) to learn it; 0 off
    views: bool  # PRIORITY_NOISE_VIEWS: near duplicates that add a parameter teach too


NOISE = Table(
    NoiseConfig,
    Setting("PRIORITY_NOISE_AFTER", "after", int, at_least(0)),
    Setting("PRIORITY_NOISE_VIEWS", "views", bool),
)


def noise_config(settings: BaseSettings) -> NoiseConfig:
    """ValueError names the bad setting."""
    return read(NOISE, settings)


# A learned set: "<host> <parameter>" or "<host> <parameter>=<value>" members
# (G:noise_params).
SEPARATOR = " "
# Scrapy signal (host=, name=): this process learned a noise parameter. The scheduler
# drops it at once instead of at its next read of G:noise_params.
noise_learned = object()


def _pairs(query: str) -> list[tuple[str, str]]:
    return [(p.partition("=")[0], p.partition("=")[2]) for p in query.split("&") if p]


def differing_values(url: str, original: str) -> dict[str, frozenset[str]]:
    """Per parameter in which two URLs of one host and path differ (value or presence):
    the values the two carry (one when the other URL has none); paging and section
    parameters left out. {} for URLs of different hosts or paths (their duplicate says
    nothing of a parameter)."""
    this, first = urlsplit(url), urlsplit(original)
    if this.netloc != first.netloc or this.path != first.path or this.query == first.query:
        return {}
    a, b = dict(_pairs(this.query)), dict(_pairs(first.query))
    return {
        name: frozenset(v for v in (a.get(name), b.get(name)) if v is not None)
        for name in a.keys() | b.keys()
        if a.get(name) != b.get(name) and name.lower() not in PLACE_PARAMS
    }


def added_values(url: str, original: str) -> dict[str, str]:
    """The parameters `url` carries that `original` (same host and path) has none of, with
    their values; paging and section parameters left out. {} for another host or path."""
    this, first = urlsplit(url), urlsplit(original)
    if this.netloc != first.netloc or this.path != first.path:
        return {}
    had = {name for name, _ in _pairs(first.query)}
    return {
        name: value
        for name, value in _pairs(this.query)
        if name not in had and name.lower() not in PLACE_PARAMS
    }


def learned(members: Collection[str]) -> dict[str, frozenset[str]]:
    """G:noise_params members -> host -> parameter names."""
    by_host: dict[str, set[str]] = {}
    for member in members:
        host, _, name = member.partition(SEPARATOR)
        if name:
            by_host.setdefault(host, set()).add(name)
    return {host: frozenset(names) for host, names in by_host.items()}


def _pair(param: str) -> str:
    """A query parameter as "name=value" (a flag without a value: "name=")."""
    return param if "=" in param else param + "="


def strip_params(url: str, noise: Mapping[str, frozenset[str]]) -> str:
    """`url` without its host's learned noise parameters (the order of the rest kept): a
    learned name drops the parameter whatever its value, a learned "name=value" that pair."""
    if not noise or "?" not in url:
        return url
    names = noise.get(host_of(url))
    if not names:
        return url
    parts = urlsplit(url)
    kept = [p for p in parts.query.split("&") if p and _pair(p) not in names]
    kept = [p for p in kept if p.partition("=")[0] not in names]
    return urlunsplit(parts._replace(query="&".join(kept)))
