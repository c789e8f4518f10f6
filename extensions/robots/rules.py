"""robots.txt policy (RFC 9309): parsing, matching, and the verdict cached per origin.

Protego does the path matching (percent-encoding normalisation, `*` and `$`, longest match,
Allow on ties). Group selection is done here, because Protego 0.7.0 departs from RFC 9309
in ways that change answers (each pinned by a test in tests/unit/robots/test_rules.py):

1. Records other than User-agent/Allow/Disallow (Crawl-delay, unknown lines) end a group
   in Protego. RFC 9309 2.2.4 says they MUST NOT interfere with the parsing of the defined
   records, so "User-agent: a / Crawl-delay: 5 / User-agent: b / Disallow: /" is one group
   {a, b}, as in Google's reference parser.
2. Protego matches a group when its name occurs in the crawler's UA string at a token start,
   so a "User-agent: crawl" group applies to "crawlproj", and "User-agent: crawlproj/1.0"
   or "crawl*" lines are kept verbatim (or with `*` dropped). RFC 9309 2.2.1: the line's
   product token is `[A-Za-z_-]+`, compared case-insensitively and exactly with ours.
3. Protego also adds a literal-"%24" twin of every pattern with a "$", so "Disallow: /a$"
   also blocks "/a$b". RFC 9309 2.2.3: "$" only anchors the end. Fixed in `_Matcher`.
4. A UTF-8 byte-order mark hides the first line from Protego; it is stripped here.

Kept from Protego/Google on purpose: "Allow: /x/index.html" also allows "/x/" (Google's
reference does the same); RFC 9309 2.2.2 equivalence of percent-encoded and raw octets.
Origins, the Redis-shared cache and sitemap parsing live in :mod:`extensions.robots.cache`.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, NoReturn, Protocol
from urllib.parse import urljoin, urlsplit

from protego import Protego

from extensions.fetch.http_dates import http_time

logger = logging.getLogger(__name__)

ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 2.5: parse at least the first 500 KiB
ROBOTS_CACHE_TTL = 86400.0  # RFC 9309 2.4: SHOULD NOT use a cached copy for more than 24 h
ROBOTS_ERROR_TTL = 600.0  # RFC 9309 2.3.1.4: a short disallow-all, then ask again
MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: follow at least five consecutive redirects
MAX_SITEMAPS = 1000  # Sitemap lines kept per robots.txt (bounds the cached verdict)
RETRY_AFTER_FLOOR = 30.0  # a "Retry-After: 0" must not turn into a robots.txt fetch loop

RULES, ALLOW_ALL, DISALLOW_ALL = "rules", "allow_all", "disallow_all"
_KINDS = (RULES, ALLOW_ALL, DISALLOW_ALL)

# RFC 9309 2.2.1: product-token = identifier / "*"; identifier = 1*(A-Z / a-z / "-" / "_").
_IDENTIFIER = re.compile(r"[A-Za-z_-]+")
# Spellings accepted as in Google's reference parser (RFC 9309 2.2.4 allows leniency).
_FIELDS = {
    alias: name
    for name, aliases in (
        ("user-agent", ("user-agent", "useragent", "user agent")),
        ("allow", ("allow",)),
        ("disallow", ("disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw")),
        ("crawl-delay", ("crawl-delay", "crawl delay")),
        ("sitemap", ("sitemap", "site-map")),
    )
    for alias in aliases
}


class SettingsLike(Protocol):
    def get(self, name: str, default: Any = None) -> Any: ...


# Field -> setting, so that a bad value is reported under the name the operator wrote.
_SETTING_NAMES = {
    "user_agent_token": "ROBOTS_USER_AGENT",
    "cache_ttl": "ROBOTS_CACHE_TTL",
    "error_ttl": "ROBOTS_ERROR_TTL",
    "max_error_ttl": "ROBOTS_MAX_ERROR_TTL",
    "max_bytes": "ROBOTS_MAX_BYTES",
    "fetch_timeout": "ROBOTS_FETCH_TIMEOUT",
}


@dataclass(frozen=True)
class RobotsPolicy:
    """ROBOTS_* settings, validated on construction."""

    user_agent_token: str = "crawlproj"
    cache_ttl: float = ROBOTS_CACHE_TTL
    error_ttl: float = ROBOTS_ERROR_TTL
    max_error_ttl: float = 86400.0
    max_bytes: int = ROBOTS_MAX_BYTES
    fetch_timeout: float = 30.0

    def __post_init__(self) -> None:
        if not _IDENTIFIER.fullmatch(self.user_agent_token or ""):
            _bad("user_agent_token", self.user_agent_token, "a product token of A-Z a-z - _")
        for name in ("cache_ttl", "error_ttl", "max_error_ttl", "fetch_timeout"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                _bad(name, value, "a positive number of seconds")
        if self.error_ttl > self.max_error_ttl:
            _bad("error_ttl", self.error_ttl, "<= ROBOTS_MAX_ERROR_TTL")
        if self.max_bytes < ROBOTS_MAX_BYTES:
            _bad("max_bytes", self.max_bytes, f">= {ROBOTS_MAX_BYTES} (RFC 9309 2.5)")
        if self.cache_ttl > ROBOTS_CACHE_TTL:
            logger.warning(
                "ROBOTS_CACHE_TTL=%s exceeds 24 h; RFC 9309 2.4 says not to", self.cache_ttl
            )

    @classmethod
    def from_settings(cls, settings: SettingsLike | Mapping[str, Any]) -> RobotsPolicy:
        """Read ROBOTS_* from Scrapy settings (or a dict); ValueError names the bad one."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = settings.get(_SETTING_NAMES[f.name], None)
            if raw is None or raw == "":
                continue
            kind = {"user_agent_token": str, "max_bytes": int}.get(f.name, float)
            try:
                values[f.name] = kind(raw)
            except (TypeError, ValueError):
                _bad(f.name, raw, f"a {kind.__name__}")
        return cls(**values)


def _bad(field_name: str, value: object, expected: str) -> NoReturn:
    raise ValueError(f"{_SETTING_NAMES[field_name]}={value!r} is invalid: expected {expected}")


# --- parsing (RFC 9309 2.1, 2.2) ----------------------------------------------------------


@dataclass
class _Group:
    agents: list[str] = field(default_factory=list)
    rules: list[tuple[str, str]] = field(default_factory=list)  # ("allow"|"disallow", path)
    delays: list[str] = field(default_factory=list)
    has_rules: bool = False  # an Allow/Disallow line, even empty, closes the agent list


@dataclass
class _Parsed:
    groups: list[_Group]
    sitemaps: list[str]


def _split_line(line: str) -> tuple[str, str] | None:
    """(canonical field, value) of one line, or None for comments and unknown records."""
    line = line.partition("#")[0].strip()  # RFC 9309 2.2: "#" starts a comment anywhere
    if not line:
        return None
    name, sep, value = line.partition(":")
    key = _FIELDS.get(name.strip().lower()) if sep else None
    if key is not None:
        return key, value.strip()
    # Google's parser also accepts a missing colon ("disallow /x"); so do we.
    words = line.split(None, 2)
    for n in (2, 1):
        key = _FIELDS.get(" ".join(words[:n]).lower()) if len(words) > n else None
        if key is not None:
            return key, " ".join(words[n:]).strip()
    return None


def _agent_token(value: str) -> str | None:
    """The product token a User-agent line names (lower case), "*", or None."""
    if value == "*" or value.startswith(("* ", "*\t")):
        return "*"
    match = _IDENTIFIER.match(value)  # "crawlproj/1.0" and "crawlproj bot" name "crawlproj"
    return match.group(0).lower() if match else None


# Small: it only spares re-parsing between the Crawl-delay, Sitemap and matcher passes over
# one body; the cached keys pin their texts (up to max_bytes each) in memory.
@functools.lru_cache(maxsize=16)
def _parse(text: str) -> _Parsed:
    groups: list[_Group] = []
    sitemaps: list[str] = []
    current: _Group | None = None
    for line in text.removeprefix("\ufeff").splitlines():
        parsed = _split_line(line)
        if parsed is None:
            continue  # RFC 9309 2.2.4: other records do not interfere with grouping
        key, value = parsed
        if key == "sitemap":
            if value and len(sitemaps) < MAX_SITEMAPS:
                sitemaps.append(value)
        elif key == "user-agent":
            if current is None or current.has_rules:
                current = _Group()
                groups.append(current)
            token = _agent_token(value)
            if token:
                current.agents.append(token)
        elif current is None:
            continue  # a rule before any User-agent line belongs to no group
        elif key == "crawl-delay":
            current.delays.append(value)
        else:
            current.has_rules = True
            if value:  # an empty Disallow allows everything: no rule (RFC 9309 2.2.2)
                current.rules.append((key, value))
    return _Parsed(groups, sitemaps)


def _select(parsed: _Parsed, token: str) -> list[_Group]:
    """RFC 9309 2.2.1: all groups naming our token (merged), else all "*" groups."""
    mine = [g for g in parsed.groups if token in g.agents]
    return mine or [g for g in parsed.groups if "*" in g.agents]


@functools.lru_cache(maxsize=1024)
def product_token(user_agent: str) -> str:
    """Our product token from a token or a full UA string ("crawlproj/0.1 (+url)")."""
    match = _IDENTIFIER.match(user_agent.strip())
    return match.group(0).lower() if match else ""


# --- matching ---------------------------------------------------------------------------

# Protego 0.7.0 adds, for a pattern with "$", a twin with "$" as a literal "%24", so
# "Disallow: /a$" would also block "/a$b". We spell a literal "$" (raw or "%24") in URLs
# and in patterns, except a pattern's final "$" (RFC 9309 2.2.3: the only special one), as
# "%00" instead; no URL is spelt with "%24" then, and the twin can never match.
_URL_DOLLAR = re.compile(r"\$|%24")
_PATTERN_DOLLAR = re.compile(r"\$(?!$)|%24")
_DOLLAR_STANDIN = "%00"


class _Matcher:
    """One selected (merged) group, compiled once by Protego."""

    __slots__ = ("_parser", "_token")

    def __init__(self, rules: list[tuple[str, str]], token: str) -> None:
        lines = ["User-agent: *"]
        lines += [f"{kind}: {_PATTERN_DOLLAR.sub(_DOLLAR_STANDIN, path)}" for kind, path in rules]
        self._parser = Protego.parse("\n".join(lines))
        self._token = token or "*"

    def allows(self, url: str) -> bool:
        if "$" in url or "%24" in url:
            url = _URL_DOLLAR.sub(_DOLLAR_STANDIN, url)
        return self._parser.can_fetch(url, self._token)


def _is_robots_txt(url: str) -> bool:
    # RFC 9309 2.2.2: "/robots.txt" is implicitly allowed.
    return "/robots.txt" in url and urlsplit(url).path == "/robots.txt"


def _compile(text: str, token: str) -> _Matcher | None:
    rules = [rule for group in _select(_parse(text), token) for rule in group.rules]
    return _Matcher(rules, token) if rules else None


# For the pure `allowed()`; verdicts keep their own matchers (RobotsVerdict._matchers).
_matcher_for = functools.lru_cache(maxsize=64)(_compile)


def _as_text(robots_txt: str | bytes) -> str:
    if isinstance(robots_txt, bytes):
        return robots_txt.decode("utf-8", errors="replace")  # RFC 9309 2.3: UTF-8
    return robots_txt


def allowed(robots_txt: str | bytes, user_agent: str, url: str) -> bool:
    """May `user_agent` (a product token or full UA string) fetch `url` under `robots_txt`?"""
    if _is_robots_txt(url):
        return True
    matcher = _matcher_for(_as_text(robots_txt), product_token(user_agent))
    return matcher is None or matcher.allows(url)


def crawl_delay(robots_txt: str | bytes, user_agent: str) -> float | None:
    """The largest valid Crawl-delay (s) of the groups that apply to `user_agent`."""
    groups = _select(_parse(_as_text(robots_txt)), product_token(user_agent))
    delays = [d for g in groups for d in map(_seconds, g.delays) if d is not None]
    # Protego keeps the last value; with merged groups the largest is the polite one.
    return max(delays) if delays else None


def _seconds(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def parse_sitemaps(robots_txt: str | bytes) -> tuple[str, ...]:
    """Absolute http(s) Sitemap URLs of a robots.txt, in order, without duplicates."""
    urls = (u for u in _parse(_as_text(robots_txt)).sitemaps if _is_http_url(u))
    return tuple(dict.fromkeys(urls))


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced "[" in the authority
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


# --- verdicts ---------------------------------------------------------------------------


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
    _matchers: dict[str, _Matcher | None] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"RobotsVerdict kind {self.kind!r} is not one of {_KINDS}")

    def allows(self, url: str, user_agent: str) -> bool:
        if self.kind == ALLOW_ALL or _is_robots_txt(url):
            return True
        if self.kind == DISALLOW_ALL:
            return False
        token = product_token(user_agent)
        try:
            matcher = self._matchers[token]
        except KeyError:
            matcher = self._matchers[token] = _compile(self.body, token)
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
    ttl = _retry_after_ttl(headers, now, policy) if status else None
    return RobotsVerdict(DISALLOW_ALL, "", None, (), now, now + (ttl or policy.error_ttl), status)


def decode_body(body: bytes, max_bytes: int = ROBOTS_MAX_BYTES) -> str:
    """UTF-8 text of a robots.txt, cut to `max_bytes` at a line end (RFC 9309 2.5)."""
    if len(body) > max_bytes:
        # A line cut in half could turn "Allow: /public/x" into a broader "Allow: /pu".
        body = body[:max_bytes]
        end = max(body.rfind(b"\n"), body.rfind(b"\r"))
        body = body[: end + 1]
    return body.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _retry_after_ttl(
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
