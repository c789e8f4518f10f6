"""robots.txt rules (RFC 9309): parsing and matching, and the ROBOTS_* policy.

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
   also blocks "/a$b". RFC 9309 2.2.3: "$" only anchors the end. Fixed in `Matcher`.
4. A UTF-8 byte-order mark hides the first line from Protego; it is stripped here.

Kept from Protego/Google on purpose: "Allow: /x/index.html" also allows "/x/" (Google's
reference does the same); RFC 9309 2.2.2 equivalence of percent-encoded and raw octets.
What a fetch of robots.txt means (verdicts) is :mod:`extensions.robots.verdicts`; origins,
the Redis-shared cache and sitemap parsing live in :mod:`extensions.robots.cache`.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from protego import Protego

from extensions.config import Setting, Table, at_least, at_most, matches, read, satisfies

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 2.5: parse at least the first 500 KiB
ROBOTS_CACHE_TTL = 86400.0  # RFC 9309 2.4: SHOULD NOT use a cached copy for more than 24 h
ROBOTS_ERROR_TTL = 600.0  # RFC 9309 2.3.1.4: a short disallow-all, then ask again
MAX_SITEMAPS = 1000  # Sitemap lines kept per robots.txt (bounds the cached verdict)

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


@dataclass(frozen=True)
class RobotsPolicy:
    """ROBOTS_* settings (ROBOTS below reads and checks them). The defaults, for code that
    builds one directly, equal crawlproj/settings.py (tests/unit/test_config.py)."""

    user_agent_token: str = "crawlproj"
    cache_ttl: float = ROBOTS_CACHE_TTL
    error_ttl: float = ROBOTS_ERROR_TTL
    max_error_ttl: float = 86400.0
    max_bytes: int = ROBOTS_MAX_BYTES
    fetch_timeout: float = 30.0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RobotsPolicy:
        """ValueError names the bad setting."""
        policy = read(ROBOTS, settings)
        if policy.cache_ttl > ROBOTS_CACHE_TTL:
            logger.warning(
                "ROBOTS_CACHE_TTL=%s exceeds 24 h; RFC 9309 2.4 says not to", policy.cache_ttl
            )
        return policy


_SECONDS = satisfies(lambda s: 0 < s < math.inf, "a finite number of seconds > 0")
ROBOTS = Table(
    RobotsPolicy,
    Setting(
        "ROBOTS_USER_AGENT",
        "user_agent_token",
        str,
        matches(_IDENTIFIER.pattern, "a product token of A-Z a-z - _"),
    ),
    Setting("ROBOTS_CACHE_TTL", "cache_ttl", float, _SECONDS),
    Setting("ROBOTS_MAX_ERROR_TTL", "max_error_ttl", float, _SECONDS),
    Setting("ROBOTS_ERROR_TTL", "error_ttl", float, _SECONDS, at_most("ROBOTS_MAX_ERROR_TTL")),
    Setting("ROBOTS_MAX_BYTES", "max_bytes", int, at_least(ROBOTS_MAX_BYTES)),  # RFC 9309 2.5
    Setting("ROBOTS_FETCH_TIMEOUT", "fetch_timeout", float, _SECONDS),
)


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


class Matcher:
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


def is_robots_txt(url: str) -> bool:
    # RFC 9309 2.2.2: "/robots.txt" is implicitly allowed.
    return "/robots.txt" in url and urlsplit(url).path == "/robots.txt"


def compile_matcher(text: str, token: str) -> Matcher | None:
    rules = [rule for group in _select(_parse(text), token) for rule in group.rules]
    return Matcher(rules, token) if rules else None


# For the pure `allowed()`; verdicts keep their own matchers (verdicts.RobotsVerdict).
_matcher_for = functools.lru_cache(maxsize=64)(compile_matcher)


def _as_text(robots_txt: str | bytes) -> str:
    if isinstance(robots_txt, bytes):
        return robots_txt.decode("utf-8", errors="replace")  # RFC 9309 2.3: UTF-8
    return robots_txt


def allowed(robots_txt: str | bytes, user_agent: str, url: str) -> bool:
    """May `user_agent` (a product token or full UA string) fetch `url` under `robots_txt`?"""
    if is_robots_txt(url):
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
