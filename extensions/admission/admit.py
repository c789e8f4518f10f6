"""Request -> AdmitItem: canonical URL, filters, URL-seen key, priority, IP.

Everything here is local and cheap (no I/O): the checks that need shared state
(URL-seen, per-host budget, per-pattern cap) run in the admit script, in the same
round trip as the enqueue.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from extensions.admission.facet_sidebar import FACET_META, filters_in, run_filters
from extensions.admission.filters import (
    BlockRules,
    UrlFilter,
    compile_block_rules,
    host_of,
)
from extensions.admission.memo import remember
from extensions.admission.noise import strip_params
from extensions.admission.path_facets import may_pair, pair_segments
from extensions.admission.patterns import (
    UrlParts,
    families,
    family_of,
    number_of,
    pattern_strings,
    split_canonical,
    split_url,
    url_patterns,
)
from extensions.admission.politeness_key import PER_IP, PolitenessKeys
from extensions.admission.prioritizer import (
    PARENT_META,
    SOURCE_META,
    Prioritizer,
    is_calendar,
    source_of,
)
from extensions.admission.records import (
    CANONICAL_META,
    NO_PATTERNS,
    SETTLES_META,
    AdmitItem,
    encode_request,
    mark_recrawl,
)
from extensions.admission.redirect_walks import CHAIN_META
from extensions.config import STRINGS, Setting, Table, at_least, read
from extensions.dns.policy import AddressRefused

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.settings import BaseSettings

    from extensions.admission.canonical import Canonicalizer
    from extensions.dns.cache import HostResolver
    from extensions.robots.gate import RobotsGate


# Redirects within one chain to another spelling of the same canonical URL that are
# followed (Admission._same_document): one is a session token added, a second one a
# token replaced once more (an expired session's new one).
SAME_DOCUMENT_HOPS = 2


class Rejected(ValueError):
    """The request cannot enter the frontier; `reason` names the stats counter."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def seen_key(canonical_url: str) -> str:
    """64-bit fingerprint of the canonical URL: 16 hex chars in the Redis seen set."""
    return hashlib.blake2b(canonical_url.encode("utf-8"), digest_size=8).hexdigest()


def url_filter_from_settings(settings: BaseSettings) -> UrlFilter:
    """URL_* and CRAWL_MAX_DEPTH settings; 0 switches a limit off (None)."""
    return read(URL_FILTER, settings)


URL_FILTER = Table(
    UrlFilter,
    Setting("URL_ALLOWED_SCHEMES", "allowed_schemes", STRINGS),
    Setting("URL_MAX_LENGTH", "max_url_length", int, at_least(1), optional=True),
    Setting("CRAWL_MAX_DEPTH", "max_depth", int, at_least(1), optional=True),
    Setting("URL_MAX_QUERY_PARAMS", "max_query_params", int, at_least(1), optional=True),
    Setting("URL_MAX_REPEATED_SEGMENTS", "max_repeated_segments", int, at_least(1), optional=True),
    Setting("URL_SKIP_EXTENSIONS", "skip_extensions", STRINGS),
)


@dataclass
class Admission:
    """Turns requests into frontier items; the Redis round trip is the caller's."""

    canonicalizer: Canonicalizer
    url_filter: UrlFilter
    resolver: HostResolver
    prioritizer: Prioritizer
    priorities: int
    keep_referer: bool
    # The robots gate, when robots.txt is obeyed: a cached verdict rejects at admission.
    robots: RobotsGate | None = None
    # FRONTIER_HOST_IP_NETWORKS: an item's "ip" is its politeness key (the IP, or
    # "<ip>@<host>" inside those networks: politeness_key.py).
    politeness: PolitenessKeys = PER_IP
    # Replaced whole when the operator's blocklist in Redis changes.
    block_rules: BlockRules = field(default_factory=lambda: compile_block_rules([]))

    # Closed URL patterns (trap feedback) and learned noise parameters (host -> names),
    # refreshed from Redis with the blocklist.
    closed_patterns: frozenset[str] = frozenset()
    # Fine pattern -> the number past which its sequence ends (traps.lua's ceilings).
    ceilings: dict[str, int] = field(default_factory=dict)
    noise: dict[str, frozenset[str]] = field(default_factory=dict)
    # The last parent URL seen and its host (referrer_key).
    _parent: tuple[str, str] = field(default=("", ""), init=False, repr=False)
    # Fine patterns of the URLs this worker admitted -> 1, or 2 once seen again (memo.py's
    # bound): the admit script gives a shape its own pattern at its second URL (closed).
    _shapes: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    # Path keys a facet sidebar marked links of (memo.py's bound): any filter of such a
    # path is capped, marked or not (a filter page's move to another value).
    _sidebar_paths: dict[str, bool] = field(default_factory=dict, init=False, repr=False)
    # The same for filters in the path under a site's own names: host + the path before
    # them -> the filter names its sidebars added (memo.py's bound).
    _sidebar_runs: dict[str, frozenset[str]] = field(default_factory=dict, init=False, repr=False)

    def priority_of(self, meta: dict[str, Any]) -> int:
        """meta['frontier_priority'] names a front queue 0 (first) .. n-1 outright;
        -1 = the bucket of the URL's score."""
        explicit = meta.get("frontier_priority")
        return -1 if explicit is None else min(max(int(explicit), 0), self.priorities - 1)

    def closed(self, url: str, listed: bool = False, catch_all: bool = False) -> str | None:
        """Why trap feedback refuses a queued URL (dispatch drops it unless a probe):
        pattern_closed, past_the_end (its number is past where its pattern's sequence
        was seen to end), or None. Sitemap URLs pass both a closed family and an end:
        the site lists them as its pages (traps.lua). The coarse pattern of a URL without
        a query counts only when the admit script charged the URL to it (`catch_all`:
        records.CATCH_MARK) and this worker has not seen its shape again since: a shop's
        first product, charged to /shop/* as a shape seen once, has a pattern of its own
        once its second is admitted, and /shop/* closed by its category pages says
        nothing of it. A query URL's coarse pattern (host/seg/*?) holds query variants
        only, and counts always."""
        if not self.closed_patterns and not self.ceilings:
            return None
        parts = split_url(url)
        p = url_patterns(parts)
        path = "p|" + p.path_key if p.path_key else ""
        kin = [] if listed else ["f|" + f for f in families(p.family)]
        coarse = p.coarse
        if not coarse.endswith("?") and (not catch_all or self._shapes.get(p.fine, 0) > 1):
            coarse = ""
        if not self.closed_patterns.isdisjoint((p.fine, coarse, path, *kin)):
            return "pattern_closed"
        end = self.ceilings.get(p.fine)
        if end is not None and not listed and number_of(parts) > end:
            return "past_the_end"
        return None

    def unproven_filter(self, url: str) -> bool:
        """Whether a queued URL is a filter in the path (a pair by a name a sidebar of its
        base added: `_run_facet_key`) that was not counted against the facet cap: queued
        before this worker saw the sidebar, as a category's first level of filters is
        (its page shows no filter yet). Dispatch drops it; records.FACET_MARK keeps the
        ones the cap let through."""
        if not self._sidebar_runs:
            return False
        parts = split_url(url)
        return not parts.query and self._run_facet_key(parts, "") != ""

    def may_admit(self, url: str) -> bool:
        """Whether `url` could enter the frontier as far as this worker knows without
        Redis: it canonicalizes, passes the filters, the block rules and a cached robots
        verdict (no depth guard: no request yet), and trap feedback has not closed it."""
        try:
            canonical, _ = self._checked(url, 0)
        except Rejected:
            return False
        return self.closed(canonical) is None

    def _pattern_fields(self, parts: UrlParts, sidebar: str) -> tuple[str, str, str, str, str]:
        """The URL's patterns (fine, coarse, host-wide, path key) and its facet key: the
        path key when the facet cap counts it ('' when not). `sidebar`: the filter name
        a facet sidebar marked the link with (facet_sidebar.py), or ''."""
        fine, coarse, host_wide, path_key = pattern_strings(parts)
        if not parts.query:
            key = self._run_facet_key(parts, sidebar) if sidebar or self._sidebar_runs else ""
            if not key and path_key and self.prioritizer.faceted(parts):
                key = path_key  # two filter segments by known names (path_facets.py)
            return (fine, coarse, host_wide, path_key, key)
        # A facet sidebar's link (facet_sidebar.py) is capped as a facet-named one is, and
        # so is any other filter of a path whose sidebar this worker has seen.
        if sidebar and path_key:
            remember(self._sidebar_paths, path_key, True)
        faceted = bool(sidebar) or self.prioritizer.faceted(parts)
        if not faceted and path_key in self._sidebar_paths:
            faceted = filters_in(parts.query)
        return (fine, coarse, host_wide, path_key, path_key if faceted else "")

    def _run_facet_key(self, parts: UrlParts, sidebar: str) -> str:
        """The facet key of a path ending in name-value segments of a site's own names
        (/shop/shoes/f/tone-red/fit-m/): its host and the path before them, when a sidebar
        marked it or when one of its pairs is a filter a sidebar of that base added (the
        moves between a filter's values, the same filters in another order); '' for a
        path that is not one of those (a category /shop/mens-jackets/ beside them)."""
        if not may_pair(parts.path):
            return ""
        run_base, pairs = pair_segments(parts.path)
        key = f"{parts.host}{run_base}/"
        names = self._sidebar_runs.get(key, frozenset())
        if sidebar:
            remember(self._sidebar_runs, key, names | {sidebar})
            return key
        return key if run_filters(pairs, names) else ""

    def item(self, request: Request, spider: Spider) -> AdmitItem:
        meta = request.meta
        canonical, parts = self._checked(request.url, meta.get("depth", 0))
        if self.prioritizer.ends_redirect_walk(canonical, meta.get(CHAIN_META)):
            raise Rejected("redirect_walk")
        host = parts.host
        try:
            ip = self.politeness.key(self.resolver.cached(host) or "", host)
        except AddressRefused as exc:
            raise Rejected(f"address/{exc.reason}") from None
        calendar = is_calendar(parts)
        # Scrapy's own priority moves the score 5 points per unit (REDIRECT_PRIORITY_ADJUST
        # +2, RETRY_PRIORITY_ADJUST -1, a spider's priority=).
        score = self.prioritizer.score_meta(meta, parts, calendar) + 5 * request.priority
        score = min(100.0, max(0.0, score))
        if score <= 0:  # a calendar's or a growing URL's walk ends here
            walk = self.prioritizer.ends_walk(meta, parts, calendar, score)
            if walk:
                raise Rejected(walk)
        fetch_url, same_document = self._fetch_url(request, canonical)
        filtered = not request.dont_filter and not same_document
        record = encode_request(
            request, spider, keep_referer=self.keep_referer, url=fetch_url, score=score
        )
        sidebar = meta.get(FACET_META) or ""
        patterns = self._pattern_fields(parts, sidebar) if filtered else NO_PATTERNS
        if filtered:
            self._saw_shape(patterns[0])
        return AdmitItem(
            seen_key=seen_key(canonical) if filtered else "",
            ip=ip,
            host=host,
            priority=self.priority_of(meta),
            record=mark_recrawl(record, bool(meta.get("recrawl"))),
            patterns=patterns,
            score=score,
            referrer=self.referrer_key(meta.get(PARENT_META), host),
            sitemap=meta.get(SOURCE_META) == "sitemap",
            family=family_of(patterns[0]) if filtered else "",
            # A seed, or its redirect (depth 0 too): its host gets the seeded budget.
            seed=not meta.get("depth") and source_of(meta) == "seed",
            number=number_of(parts) if filtered else -1,
            settles=meta.get(SETTLES_META, "") if filtered else "",
        )

    def _saw_shape(self, fine: str) -> None:
        seen = self._shapes.get(fine)
        if seen is None:
            remember(self._shapes, fine, 1)
        elif seen == 1:
            self._shapes[fine] = 2

    def _fetch_url(self, request: Request, canonical: str) -> tuple[str, bool]:
        """(the URL the request goes out as, whether it is a same-document redirect). The
        canonical URL, except where the server's spelling carries a session in its path:
        a redirect to its own URL's other spelling goes as redirected (the canonical one
        is what redirected), a link as linked but canonical otherwise. Either way
        meta[CANONICAL_META] keeps the canonical URL, for feedback and the row."""
        url, meta = request.url, request.meta
        meta.pop(CANONICAL_META, None)  # a redirect's copy of its source's meta
        same_document = self._same_document(meta, canonical)
        if same_document:
            fetch_url = url
        elif "(" in url or ";" in url:
            fetch_url = self.canonicalizer.with_path_session(url) or canonical
            if self.noise and fetch_url != canonical:
                fetch_url = strip_params(fetch_url, self.noise)
        else:
            return canonical, False
        if fetch_url != canonical:
            meta[CANONICAL_META] = canonical
        return fetch_url, same_document

    def _same_document(self, meta: dict[str, Any], canonical: str) -> bool:
        """Whether a redirect leads to another spelling of a URL of its own chain: a
        session token the server adds to the path (ASP.NET's cookieless `/(S(...))/`,
        Java's `;jsessionid=` on the first visit) or takes away. It is the document
        the chain's lease was for, not a URL seen before: URL-seen would drop it, and
        with it every page of a site that redirects its first visit. Rejected
        (redirect_loop) past SAME_DOCUMENT_HOPS such hops: a server that answers every
        spelling with a redirect."""
        chain = meta.get("redirect_urls")
        if not chain:
            return False
        canonicalize = self.canonicalizer.canonicalize
        hops = sum(1 for url in chain if canonicalize(url) == canonical)
        if hops > SAME_DOCUMENT_HOPS:
            raise Rejected("redirect_loop")
        return hops > 0

    def _checked(self, url: str, depth: int) -> tuple[str, UrlParts]:
        """`url` canonical (learned noise parameters dropped) and split, past the filters,
        the block rules and a cached robots verdict (item and may_admit); Rejected else."""
        canonical = self.canonicalizer.canonicalize(url)
        if canonical is None:
            raise Rejected("uncanonical")
        if self.noise:  # learned noise parameters are rare: no call without any
            canonical = strip_params(canonical, self.noise)
        # Split once: the filters, the prioritizer and the patterns share it.
        parts = split_canonical(canonical)
        self._check(canonical, parts, depth)
        return canonical, parts

    def _check(self, canonical: str, parts: UrlParts, depth: int) -> None:
        """Rejected by the URL filters, the block rules or a cached robots verdict."""
        scheme = canonical[: canonical.find(":")]
        reason = self.url_filter.check_split(canonical, scheme, parts.path, parts.query, depth)
        if reason is not None:
            raise Rejected(f"filter/{reason}")
        if self.block_rules.match(canonical) is not None:
            raise Rejected("blocked")
        if self.robots is not None and not self.robots.admits(canonical):
            raise Rejected("robots_forbidden")

    def referrer_key(self, parent: tuple[float | None, str] | None, host: str) -> str:
        """URL-seen key of (the parent's host, host) for a cross-host link, else ''."""
        if not parent:
            return ""
        # A page's outlinks arrive one after another with the same parent: its host is
        # parsed once per page.
        parent_url = parent[1]
        if parent_url != self._parent[0]:
            self._parent = (parent_url, host_of(parent_url))
        referring = self._parent[1]
        if not referring or referring == host:
            return ""
        return seen_key(f"ref {referring} {host}")
