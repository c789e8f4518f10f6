"""Request -> AdmitItem: canonical URL, URL-seen key, front-queue priority, IP."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from extensions.frontier.core import AdmitItem
from extensions.frontier.records import encode_request
from extensions.url_filters import host_of
from extensions.urls import Canonicalizer

if TYPE_CHECKING:
    from scrapy import Request, Spider

    from extensions.dns import HostResolver


class Rejected(ValueError):
    """The request cannot enter the frontier; `reason` names the stats counter."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def seen_key(canonical_url: str) -> str:
    """64-bit fingerprint of the canonical URL: 16 hex chars in the Redis seen set."""
    return hashlib.blake2b(canonical_url.encode("utf-8"), digest_size=8).hexdigest()


class Admission:
    """Turns requests into frontier items; the Redis round trip is the caller's."""

    def __init__(
        self,
        canonicalizer: Canonicalizer,
        resolver: HostResolver,
        default_priority: int,
        priorities: int,
        keep_referer: bool,
    ) -> None:
        self.canonicalizer = canonicalizer
        self.resolver = resolver
        self.default_priority = default_priority
        self.priorities = priorities
        self.keep_referer = keep_referer

    def priority_of(self, request: Request) -> int:
        """Front queue 0 (first) .. n-1: meta['frontier_priority'], else derived from
        Scrapy's priority (higher Scrapy priority = lower queue number)."""
        explicit = request.meta.get("frontier_priority")
        wanted = self.default_priority - request.priority if explicit is None else int(explicit)
        return min(max(wanted, 0), self.priorities - 1)

    def item(self, request: Request, spider: Spider) -> tuple[Request, AdmitItem]:
        canonical = self.canonicalizer.canonicalize(request.url)
        if canonical is None:
            raise Rejected("uncanonical")
        if canonical != request.url:
            request = request.replace(url=canonical)
        host = host_of(canonical)
        record = encode_request(request, spider, keep_referer=self.keep_referer)
        item = AdmitItem(
            seen_key="" if request.dont_filter else seen_key(canonical),
            ip=self.resolver.cached(host) or "",
            host=host,
            priority=self.priority_of(request),
            record=record,
        )
        return request, item
