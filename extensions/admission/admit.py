"""Request -> AdmitItem: canonical URL, filters, URL-seen key, priority, IP.

Everything here is local and cheap (no I/O): the checks that need shared state
(URL-seen, per-host budget, per-pattern cap) run in the admit script, in the same
round trip as the enqueue.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from extensions.admission.filters import (
    BlockRules,
    UrlFilter,
    compile_block_rules,
    host_of,
    trap_pattern,
)
from extensions.admission.records import AdmitItem, encode_request, mark_recrawl
from extensions.config import STRINGS, Setting, Table, at_least, read
from extensions.dns.policy import AddressRefused

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.settings import BaseSettings

    from extensions.admission.canonical import Canonicalizer
    from extensions.dns.cache import HostResolver
    from extensions.robots.gate import RobotsGate


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
    default_priority: int
    priorities: int
    keep_referer: bool
    # The robots gate, when robots.txt is obeyed: a cached verdict rejects at admission.
    robots: RobotsGate | None = None
    # Replaced whole when the operator's blocklist in Redis changes.
    block_rules: BlockRules = field(default_factory=lambda: compile_block_rules([]))

    def priority_of(self, request: Request) -> int:
        """Front queue 0 (first) .. n-1: meta['frontier_priority'], else derived from
        Scrapy's priority (higher Scrapy priority = lower queue number)."""
        explicit = request.meta.get("frontier_priority")
        wanted = self.default_priority - request.priority if explicit is None else int(explicit)
        return min(max(wanted, 0), self.priorities - 1)

    def item(self, request: Request, spider: Spider) -> AdmitItem:
        canonical = self.canonicalizer.canonicalize(request.url)
        if canonical is None:
            raise Rejected("uncanonical")
        reason = self.url_filter.check(canonical, request.meta.get("depth", 0))
        if reason is not None:
            raise Rejected(f"filter/{reason}")
        if self.block_rules.match(canonical) is not None:
            raise Rejected("blocked")
        if self.robots is not None and not self.robots.admits(canonical):
            raise Rejected("robots_forbidden")
        host = host_of(canonical)
        try:
            ip = self.resolver.cached(host) or ""
        except AddressRefused as exc:
            raise Rejected(f"address/{exc.reason}") from None
        # Only URLs with a numeric/date shape share a trap-guard counter; a shape
        # equal to the URL itself would cost one Redis hash field per URL.
        pattern = trap_pattern(canonical)
        item = AdmitItem(
            seen_key="" if request.dont_filter else seen_key(canonical),
            ip=ip,
            host=host,
            priority=self.priority_of(request),
            record=mark_recrawl(
                encode_request(request, spider, keep_referer=self.keep_referer, url=canonical),
                bool(request.meta.get("recrawl")),
            ),
            pattern="" if pattern == canonical else pattern,
        )
        return item
