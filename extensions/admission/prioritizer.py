"""The prioritizer: a score (0..100) for every admitted URL, from what admission knows.

The frontier never converges, so the score decides which pages a crawl ever reaches.
Two halves, both from PRIORITY_* settings:

- here, locally and cheaply (no I/O): the URL's source (seed, sitemap, link, re-crawl;
  a redirect or retry keeps the score of the request it replaces), its parent's score
  with decay (so long link chains sink), its depth, and its
  shape (query parameters, names known as facets/sort/session, a parameter added to an
  already filtered URL of the same path), a date (a calendar's page), and whether it
  only grows its parent's URL in place (growth.py: a related-search query, a growing
  slug, a repeated segment); a calendar's or a growth's walk ends where its score
  reaches 0 (Prioritizer.ends_walk);
- in the admit script (frontier/lua/traps.lua), atomically with the enqueue: the host's
  importance (distinct referring hosts seen so far) and the URL pattern's trap feedback
  (a demoted pattern loses PRIORITY_DEMOTE_PENALTY; a closed one is refused).

The final score's bucket is the front queue and the lane of the IP's back queue
(bucket 0: a score above 100 - 100/n, ...), so within an IP the best-scored URL goes first
(invariant 8). `meta["frontier_priority"]` still names a bucket outright (re-crawls,
robots sitemaps of old callers, operators).

Requests learn their source and parent from `SourceMiddleware` (sources.py), which
stamps them as the spider yields them; the parent's own score rides in its record ("s").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from extensions.admission.calendars import is_calendar
from extensions.admission.growth import grows
from extensions.admission.path_facets import NO_RUN, FacetRun, facet_run, may_pair, refines
from extensions.admission.patterns import UrlParts, split_url
from extensions.admission.redirect_walks import in_shape
from extensions.admission.url_params import PAGE_PARAMS
from extensions.config import STRINGS, Setting, Table, at_least, between, read

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.settings import BaseSettings

MAX_SCORE = 100.0
SOURCES = ("seed", "sitemap", "link", "recrawl", "probe")
# Transient meta the source middleware writes (never stored: records.TRANSIENT_META).
SOURCE_META = "frontier_source"
PARENT_META = "frontier_parent"  # (parent score, parent URL)
SCORE_META = "frontier_score"  # a leased request's own score, from its record


@dataclass(frozen=True)
class PriorityConfig:
    seed_score: float
    sitemap_score: float
    link_score: float  # a link whose parent's score is unknown
    inherit: float  # a link's share of its parent's score
    depth_penalty: float
    param_penalty: float
    facet_penalty: float
    facet_params: tuple[str, ...]
    refine_penalty: float
    calendar_penalty: float  # a URL naming a date: a calendar's page, one of endless
    growth_penalty: float  # a URL that only grows its parent's in place (growth.py)
    redirect_walk: int  # URLs of one shape a redirect chain fetches (redirect_walks.py)


PRIORITY = Table(
    PriorityConfig,
    Setting("PRIORITY_SEED_SCORE", "seed_score", float, between(0, MAX_SCORE)),
    Setting("PRIORITY_SITEMAP_SCORE", "sitemap_score", float, between(0, MAX_SCORE)),
    Setting("PRIORITY_LINK_SCORE", "link_score", float, between(0, MAX_SCORE)),
    Setting("PRIORITY_INHERIT", "inherit", float, between(0, 1)),
    Setting("PRIORITY_DEPTH_PENALTY", "depth_penalty", float, at_least(0)),
    Setting("PRIORITY_PARAM_PENALTY", "param_penalty", float, at_least(0)),
    Setting("PRIORITY_FACET_PENALTY", "facet_penalty", float, at_least(0)),
    Setting("PRIORITY_FACET_PARAMS", "facet_params", STRINGS),
    Setting("PRIORITY_REFINE_PENALTY", "refine_penalty", float, at_least(0)),
    Setting("PRIORITY_CALENDAR_PENALTY", "calendar_penalty", float, at_least(0)),
    Setting("PRIORITY_GROWTH_PENALTY", "growth_penalty", float, at_least(0)),
    Setting("PRIORITY_REDIRECT_WALK", "redirect_walk", int, at_least(0)),
)


def bucket(score: float, priorities: int) -> int:
    """Front queue / back-queue lane of a score: 0 for the best 100/n points, then down."""
    step = MAX_SCORE / priorities
    return min(priorities - 1, max(0, math.floor((MAX_SCORE - score) / step)))


class Prioritizer:
    """The local half of a URL's score; one per scheduler, built from settings."""

    def __init__(self, config: PriorityConfig) -> None:
        self.config = config
        self._facets = frozenset(name.lower() for name in config.facet_params)
        # The last parent split (a page's outlinks arrive one after another with it).
        self._parent: tuple[str, UrlParts] = ("", split_url("http://-/"))

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Prioritizer:
        """ValueError names the bad setting."""
        return cls(read(PRIORITY, settings))

    def score(self, request: Request, canonical: str | UrlParts) -> float:
        """0..100: source and parent, minus depth and shape penalties."""
        parts = split_url(canonical) if isinstance(canonical, str) else canonical
        return self.score_meta(request.meta, parts, is_calendar(parts))

    def score_meta(self, meta: dict[str, Any], parts: UrlParts, calendar: bool) -> float:
        """score() from the request's meta and whether its URL is_calendar (admission
        reads both once per URL)."""
        own = meta.get(SCORE_META)
        if own is not None:
            # A leased request coming back (a redirect, a retry): the same document.
            return min(MAX_SCORE, max(0.0, float(own)))
        c = self.config
        source = source_of(meta)
        parent = meta.get(PARENT_META)
        if source == "seed":
            base = c.seed_score
        elif source == "sitemap":
            base = c.sitemap_score
        elif parent and parent[0] is not None:
            base = float(parent[0]) * c.inherit
        else:
            base = c.link_score
        depth = meta.get("depth", 0)
        if depth:
            base -= c.depth_penalty * int(depth)
        if parts.query or _filter_run(parts.path).segments >= 2:
            base -= self.shape_penalty(parts, parent[1] if parent else None)
        if calendar:
            base -= c.calendar_penalty
        if parent and parent[1] and self.grows(parts, parent[1]):
            base -= c.growth_penalty
        return min(MAX_SCORE, max(0.0, base))

    def grows(self, parts: UrlParts, parent_url: str) -> bool:
        """The URL only grows its parent's in place (growth.py): a walk of one template."""
        return grows(parts, self._split_parent(parent_url))

    def _split_parent(self, parent_url: str) -> UrlParts:
        if parent_url != self._parent[0]:
            self._parent = (parent_url, split_url(parent_url))
        return self._parent[1]

    def ends_redirect_walk(self, url: str, chain: list[str] | None) -> bool:
        """A redirect target with PRIORITY_REDIRECT_WALK URLs of its shape before it in
        its chain (redirect_walks.py): an endless chain's next hop."""
        walk = self.config.redirect_walk
        return walk > 0 and chain is not None and in_shape(url, chain) >= walk

    def ends_walk(self, meta: dict[str, Any], parts: UrlParts, calendar: bool, score: float) -> str:
        """'calendar_walk' for a calendar's link from a calendar page, 'growth_walk' for
        a link that grows its parent's in place, 'facet_walk' for one that adds a filter
        to its parent's filtered URL, once its score has sunk to 0; else ''. A leased
        request coming back (its own score) is never one.

        A facet walk: filter pages that list products of their own (no copy for
        feedback to see) and name no canonical would otherwise be crawled in every
        combination, at score 0 but to the end (2,465 of 3,330 requests on dealt:6 with
        trap prose). Each filter costs a parameter's penalty, an added one also
        PRIORITY_REFINE_PENALTY, so a walk from a real listing ends a few hops in."""
        if score > 0 or meta.get(SCORE_META) is not None:
            return ""
        parent: tuple[float | None, str] | None = meta.get(PARENT_META)
        if not parent or not parent[1]:
            return ""
        if calendar and is_calendar(parent[1]):
            return "calendar_walk"
        if self.grows(parts, parent[1]):
            return "growth_walk"
        return "facet_walk" if self._refines_filters(parts, parent[1]) else ""

    def _refines_filters(self, parts: UrlParts, parent_url: str) -> bool:
        """The URL moves in its parent's filters: the same path with a parameter added
        or taken away, or other values of two or more (paging aside: a listing's next
        page is its own walk, and the way to its older items); or a segment added to its
        parent's run of filter segments. One parameter's other value is the next
        document of a one-parameter site (?title=, ?id=), not a filter."""
        if parts.query and "?" in parent_url:
            parent = self._split_parent(parent_url)
            if parent.path != parts.path:
                return False
            mine, theirs = _unpaged(parts.query), _unpaged(parent.query)
            if mine == theirs:
                return False
            return len(mine) > 1 or _names(mine) != _names(theirs)
        run = _filter_run(parts.path)
        return bool(run.segments) and refines(run, self._split_parent(parent_url).path)

    def ends_calendar_walk(self, request: Request, parts: UrlParts, score: float) -> bool:
        """A calendar's link from a calendar page whose score has sunk to 0: every hop
        of a next/previous-month walk costs PRIORITY_CALENDAR_PENALTY and inherits only
        a share of its parent's score, so a walk from a real page ends ~3 hops in,
        while the walk itself would never end. Real dated pages are reached from
        listings and sitemaps, not by walking month by month."""
        return self.ends_walk(request.meta, parts, is_calendar(parts), score) == "calendar_walk"

    def faceted(self, parts: UrlParts) -> bool:
        """A query parameter named like a facet/sort/session, or two filter segments in
        the path (path_facets.py): the facet cap counts it."""
        if not parts.names.isdisjoint(self._facets):
            return True
        return _filter_run(parts.path).segments >= 2

    def shape_penalty(self, url: str | UrlParts, parent_url: str | None) -> float:
        """Per query parameter, more per facet/sort/session name, more again when the
        URL only adds a filter to its parent's already filtered URL (a facet walk). In a
        run of two or more filter segments (/f/color-red/size-m/) each costs what a facet
        parameter does; one alone reads as a slug and costs nothing."""
        parts = split_url(url) if isinstance(url, str) else url
        c = self.config
        penalty = 0.0
        if parts.query:
            names = parts.names
            penalty += c.param_penalty * len(names)
            penalty += c.facet_penalty * len(names & self._facets)
            if parent_url and _refines(parts, parent_url):
                penalty += c.refine_penalty
        run = _filter_run(parts.path)
        # One segment may be a slug ("style-guide"): only a run of filters is scored.
        if run.segments >= 2:
            penalty += (c.param_penalty + c.facet_penalty) * run.segments
            if parent_url and refines(run, self._split_parent(parent_url).path):
                penalty += c.refine_penalty
        return penalty


def source_of(meta: dict[str, Any]) -> str:
    """seed, sitemap, link, recrawl or probe: what brought the URL (SourceMiddleware)."""
    source = meta.get(SOURCE_META)
    if source in SOURCES:
        return str(source)
    if meta.get("recrawl"):
        return "recrawl"
    return "link" if meta.get("depth", 0) else "seed"


def _filter_run(path: str) -> FacetRun:
    """facet_run behind a cheap pre-check: a filter segment needs a separator and no dot
    (most paths skip the memo and its regex)."""
    return facet_run(path) if may_pair(path) else NO_RUN


def _unpaged(query: str) -> frozenset[str]:
    """A query's name=value pairs without the paging ones."""
    return frozenset(p for p in query.split("&") if p.partition("=")[0].lower() not in PAGE_PARAMS)


def _names(pairs: frozenset[str]) -> frozenset[str]:
    return frozenset(p.partition("=")[0] for p in pairs)


def _refines(parts: UrlParts, parent_url: str) -> bool:
    if "?" not in parent_url:
        return False
    parent = split_url(parent_url)
    return parent.path == parts.path and len(parts.names) > len(parent.names)
