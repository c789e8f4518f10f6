"""Pure URL filters: scheme/length/depth/query/repetition/extension checks, block rules.

Per-host budgets, URL patterns (patterns.py) and the live blocklist need shared state
(Redis) and live elsewhere; this module only computes reasons. URLs are expected to be
canonical (see :mod:`extensions.admission.canonical`); nothing here fails on others.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from extensions.fetch.content_type import robots_or_sitemap_path

__all__ = ["BlockRules", "UrlFilter", "compile_block_rules", "host_of", "split_absolute"]

# scheme, authority, path, query of an absolute URL (fragment ignored).
_URL_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#]*)([^?#]*)(?:\?([^#]*))?")
# Digit runs: a counted segment (more2, p3) shares its stem with its neighbours.
_DIGIT_RUN = re.compile(r"[0-9]+")


def host_of(url: str) -> str:
    """Lower-cased host of ``url`` without userinfo, port or trailing dot; "" if none.

    IPv6 literals keep their brackets (``[::1]``) so the result is also a valid netloc.
    """
    return split_absolute(url)[0]


def split_absolute(url: str) -> tuple[str, str, str]:
    """(host as host_of gives it, path, query) of an absolute URL; ("", "", "") if it
    is not one. One regex match for admission's hot path (patterns, prioritizer)."""
    match = _URL_RE.match(url)
    if match is None:
        return "", "", ""
    hostport = match.group(2).rpartition("@")[2]
    if hostport.startswith("["):
        host = hostport[: hostport.find("]") + 1].lower()
    else:
        host = hostport.partition(":")[0].lower().rstrip(".")
    return host, match.group(3), match.group(4) or ""


class UrlFilter:
    """Stateless admission checks; each limit may be None to disable it."""

    def __init__(
        self,
        allowed_schemes: Iterable[str] = ("http", "https"),
        max_url_length: int | None = 1000,
        max_depth: int | None = 16,
        max_query_params: int | None = 16,
        max_repeated_segments: int | None = 3,
        skip_extensions: Iterable[str] = (),
    ) -> None:
        self.allowed_schemes = frozenset(s.lower() for s in allowed_schemes)
        self.max_url_length = max_url_length
        self.max_depth = max_depth
        self.max_query_params = max_query_params
        self.max_repeated_segments = max_repeated_segments
        # ".PNG" means "png"; an empty entry ("-s URL_SKIP_EXTENSIONS=") skips nothing.
        extensions = (e.strip().lstrip(".").lower() for e in skip_extensions)
        self.skip_extensions = frozenset(e for e in extensions if e)

    def check(self, url: str, depth: int) -> str | None:
        """Reason code why ``url`` (found at ``depth``) must be skipped, or None if allowed.

        Codes: "scheme", "length", "depth", "query_params", "repeated_segments", "extension".
        """
        match = _URL_RE.match(url)
        if match is None:
            return "scheme"
        return self.check_split(url, match.group(1), match.group(3), match.group(4), depth)

    def check_split(
        self, url: str, scheme: str, path: str, query: str | None, depth: int
    ) -> str | None:
        """check() of a URL already split (admission splits each canonical URL once)."""
        if scheme.lower() not in self.allowed_schemes:
            return "scheme"
        if self.max_url_length is not None and len(url) > self.max_url_length:
            return "length"
        if self.max_depth is not None and depth > self.max_depth:
            return "depth"
        limit = self.max_query_params
        if limit is not None and query and sum(1 for p in query.split("&") if p) > limit:
            return "query_params"
        repeated = self.max_repeated_segments
        # A path with no more slashes than the limit has no more segments either.
        if repeated is not None and path.count("/") > repeated and self._repeats(path):
            return "repeated_segments"
        if self.skip_extensions and self._skipped_extension(path):
            return "extension"
        return None

    def _skipped_extension(self, path: str) -> bool:
        """The last segment ends in a skipped extension: "x.rst.txt" tries "rst.txt", then
        "txt" (the query is not looked at). Robots.txt and sitemaps always pass: the
        frontier fetches one, the spider's parse_sitemap queues the other (asked last:
        most paths end in no skipped extension)."""
        segment = path.rpartition("/")[2].lower()
        dot = segment.find(".")
        while dot >= 0:
            if segment[dot + 1 :] in self.skip_extensions:
                return not robots_or_sitemap_path(path)
            dot = segment.find(".", dot + 1)
        return False

    def _repeats(self, path: str) -> bool:
        """A segment occurring more than N times anywhere in the path (``/a/b/a/b/a/b/a/b``),
        or a named segment's stem with only its number changed (``/more/more2/more3/more4``,
        ``/p1/p2/p3/p4``: a path that grows by a counted segment per hop). Date-like runs
        of bare numbers (``/2024/05/17``) have no stem and are not counted."""
        limit = self.max_repeated_segments
        assert limit is not None
        segments = [s for s in path.split("/") if s]
        if len(segments) <= limit:
            return False
        if max(Counter(segments).values()) > limit:
            return True
        stems = Counter(_DIGIT_RUN.sub("", s) for s in segments if not s.isdigit())
        return any(n > limit for stem, n in stems.items() if any(c.isalpha() for c in stem))


class BlockRules:
    """Compiled block rules; :meth:`match` returns the first matching rule line or None."""

    def __init__(self, hosts: dict[str, str], patterns: list[tuple[re.Pattern[str], str, bool]]):
        self._hosts = hosts  # host suffix -> rule line
        self._patterns = patterns  # (regex, rule line, match without "scheme://")

    def __len__(self) -> int:
        return len(self._hosts) + len(self._patterns)

    def match(self, url: str) -> str | None:
        if self._hosts:
            host = host_of(url)
            while host:  # the host, then each parent domain
                rule = self._hosts.get(host)
                if rule is not None:
                    return rule
                host = host.partition(".")[2]
        if self._patterns:
            _, sep, rest = url.partition("://")
            schemeless = rest if sep else url
            for regex, line, strip_scheme in self._patterns:
                if regex.search(schemeless if strip_scheme else url):
                    return line
        return None


def _glob_to_regex(glob: str) -> str:
    """``*`` stays inside the host part before the first "/", so ``*.example.org/*``
    cannot match ``evil.com/x.example.org/``; ``?`` is one character."""
    slash = glob.find("/")
    host_part, rest = (glob, "") if slash < 0 else (glob[:slash], glob[slash:])
    parts = ["^"]
    for text, star, one in ((host_part, "[^/]*", "[^/]"), (rest, ".*", ".")):
        parts.extend(star if c == "*" else one if c == "?" else re.escape(c) for c in text)
    parts.append("$")
    return "".join(parts)


def compile_block_rules(lines: Iterable[str]) -> BlockRules:
    """Compile block rules, one per line; blank lines and ``#`` comments are skipped.

    - ``host:example.com`` blocks the host and all its subdomains;
    - ``re:<regex>`` is searched in the full URL;
    - anything else is a glob matched against the whole URL without ``scheme://``
      (or with it, if the glob itself contains ``://``).

    Raises ValueError naming the line for an invalid regex or an empty host rule.
    """
    hosts: dict[str, str] = {}
    patterns: list[tuple[re.Pattern[str], str, bool]] = []
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("host:"):
            host = line[5:].strip().lower().rstrip(".")
            if not host.isascii():
                try:  # compare with canonical (punycode) hosts
                    host = host.encode("idna").decode("ascii")
                except UnicodeError as exc:
                    raise ValueError(f"invalid block rule {line!r}: {exc}") from exc
            if not host:
                raise ValueError(f"invalid block rule {line!r}: empty host")
            hosts.setdefault(host, line)
        elif line.startswith("re:"):
            try:
                patterns.append((re.compile(line[3:]), line, False))
            except re.error as exc:
                raise ValueError(f"invalid block rule {line!r}: {exc}") from exc
        else:
            patterns.append((re.compile(_glob_to_regex(line)), line, "://" not in line))
    return BlockRules(hosts, patterns)
