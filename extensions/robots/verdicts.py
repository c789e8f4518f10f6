"""What a robots.txt fetch means for its origin (RFC 9309 2.3): the verdict, cached per
origin until it expires, and the redirects and Retry-After of the fetch that made it.

The rules themselves (parsing, matching) are :mod:`extensions.robots.rules`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from urllib.parse import urljoin

from extensions.fetch.http_dates import http_time
from extensions.robots.rules import (
    ROBOTS_MAX_BYTES,
    Matcher,
    RobotsPolicy,
    compile_matcher,
    crawl_delay,
    is_robots_txt,
    parse_sitemaps,
    product_token,
)

logger = logging.getLogger(__name__)

MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: follow at least five consecutive redirects
RETRY_AFTER_FLOOR = 30.0  # a "Retry-After: 0" must not turn into a robots.txt fetch loop

RULES, ALLOW_ALL, DISALLOW_ALL = "rules", "allow_all", "disallow_all"
_KINDS = (RULES, ALLOW_ALL, DISALLOW_ALL)


@dataclass(frozen=True)
class RobotsVerdict:
    """What an origin's robots.txt fetch means for the crawl, until `expires_at`."""

    kind: str  # "rules" | "allow_all" | "disallow_all"
    body: str  # robots.txt text when kind == "rules", capped at the policy's max_bytes
    crawl_delay: float | None  # for our product token's group(s), None if absent
    sitemaps: tuple[str, ...]
    fetched_at: float
    expires_at: float
    status: int  # HTTP status, 0 for a network failure or timeout
    # Compiled groups per product token: parsing per URL would be far too slow.
    _matchers: dict[str, Matcher | None] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"RobotsVerdict kind {self.kind!r} is not one of {_KINDS}")

    def allows(self, url: str, user_agent: str) -> bool:
        if self.kind == ALLOW_ALL or is_robots_txt(url):
            return True
        if self.kind == DISALLOW_ALL:
            return False
        token = product_token(user_agent)
        try:
            matcher = self._matchers[token]
        except KeyError:
            matcher = self._matchers[token] = compile_matcher(self.body, token)
        return matcher is None or matcher.allows(url)

    def to_json(self) -> str:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        data["sitemaps"] = list(self.sitemaps)
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, s: str | bytes) -> RobotsVerdict:
        data = json.loads(s)
        try:
            return cls(
                kind=str(data["kind"]),
                body=str(data["body"]),
                crawl_delay=None if data["crawl_delay"] is None else float(data["crawl_delay"]),
                sitemaps=tuple(str(u) for u in data["sitemaps"]),
                fetched_at=float(data["fetched_at"]),
                expires_at=float(data["expires_at"]),
                status=int(data["status"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a RobotsVerdict: {exc!r}") from exc


def verdict_from_response(
    status: int,
    body: bytes | None,
    headers: Mapping[str, str] | None,
    now: float,
    policy: RobotsPolicy,
    user_agent: str,
) -> RobotsVerdict:
    """RFC 9309 2.3.1: the verdict for the final response of a robots.txt fetch.

    The caller follows 3xx itself (up to MAX_REDIRECTS, see `next_redirect`) and passes
    the last response; status 0 means a network failure or timeout.
    """
    if 200 <= status < 300:
        text = decode_body(body or b"", policy.max_bytes)
        delay = crawl_delay(text, user_agent)
        return RobotsVerdict(
            RULES, text, delay, parse_sitemaps(text), now, now + policy.cache_ttl, status
        )
    if 300 <= status < 500 and status != 429:
        # 2.3.1.3: 4xx (401 and 403 included) means "unavailable": crawl without limits.
        # 2.3.1.2: a 3xx here is a chain longer than the caller follows; also unavailable.
        return RobotsVerdict(ALLOW_ALL, "", None, (), now, now + policy.cache_ttl, status)
    # 2.3.1.4: server errors and network failures mean complete disallow. 429 asks us to
    # slow down, which is no licence to crawl; statuses outside 100-599 are errors too.
    if status != 0 and not (status == 429 or 500 <= status < 600):
        logger.debug("robots.txt answered HTTP %d: treated as a server error", status)
    ttl = retry_after_ttl(headers, now, policy) if status else None
    return RobotsVerdict(DISALLOW_ALL, "", None, (), now, now + (ttl or policy.error_ttl), status)


def decode_body(body: bytes, max_bytes: int = ROBOTS_MAX_BYTES) -> str:
    """UTF-8 text of a robots.txt, cut to `max_bytes` at a line end (RFC 9309 2.5)."""
    if len(body) > max_bytes:
        # A line cut in half could turn "Allow: /public/x" into a broader "Allow: /pu".
        body = body[:max_bytes]
        end = max(body.rfind(b"\n"), body.rfind(b"\r"))
        body = body[: end + 1]
    return body.decode("utf-8", errors="replace").removeprefix("\ufeff")


def retry_after_ttl(
    headers: Mapping[str, str] | None, now: float, policy: RobotsPolicy
) -> float | None:
    """Retry-After (delta-seconds or HTTP-date) in seconds, bounded; None if absent/bad."""
    value = _header(headers, "retry-after")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        when = http_time(value)
        if when is None:
            return None
        seconds = when - now
    floor = min(policy.error_ttl, RETRY_AFTER_FLOOR)
    return min(max(seconds, floor), policy.max_error_ttl)


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return value
    return None


def next_redirect(url: str, status: int, headers: Mapping[str, str] | None) -> str | None:
    """Absolute target of a 3xx robots.txt response, or None if it is not a redirect.

    RFC 9309 2.3.1.2: follow at most MAX_REDIRECTS hops, across hosts too; the verdict
    still belongs to the origin first asked.
    """
    if status not in (301, 302, 303, 307, 308):
        return None
    location = _header(headers, "location")
    return urljoin(url, location.strip()) if location else None
