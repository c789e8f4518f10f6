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
from typing import NamedTuple

from extensions.admission.domains import registered_domain
from extensions.admission.filters import split_absolute
from extensions.admission.memo import recall, remember
from extensions.admission.path_facets import facet_run, marker, pair_run

_DIGITS = re.compile(r"[0-9]+")
_NUMBER = re.compile(r"[0-9]{1,15}")  # a counter Lua holds exactly (a double)
# Long hex runs (hashes, UUID parts, session tokens): a digit and a letter a-f, 16+ chars.
_HEX_TOKEN = re.compile(
    r"(?<![0-9A-Za-z])(?=[0-9a-fA-F-]*[0-9])(?=[0-9a-fA-F-]*[a-fA-F])[0-9a-fA-F-]{16,}(?![0-9A-Za-z])"
)
# What every hex token contains: most paths have no such run, and this plain scan is
# far cheaper than _HEX_TOKEN's lookaheads at every position.
_HEX_RUN = re.compile(r"[0-9a-fA-F-]{16}")
# A segment of letters and two digit runs or more (after _DIGITS: "<N>b<N>e<N>"): a short
# token (a 12-hex id, a base62 one, "dQw4w9WgXcQ"), <T> in the template, or each would be
# a pattern of its own, never judged with its siblings. One digit run ("page2", "v3",
# "h264") stays a name; dashes, dots and underscores between runs (dates, versions) too.
_MIXED_TOKEN = re.compile(r"(?:[A-Za-z]*<N>){2,}[A-Za-z]*")
# A path segment this long is a token (a growing slug, an encoded blob), not a name.
_LONG_SEGMENT = 32
_NO_NAMES: frozenset[str] = frozenset()
_MARKER = re.compile(r"<[A-Z]>")  # an abstracted run in a template: <N>, <H>, <T>, <L>, <P>
# A numbered slug has a family (blue-shoe-<N>): two words or more beside its number. Each
# such product or post is a fine pattern of its own, and without a family its every view
# (`?replytocom=`) was judged alone, 3 fetches a page. A numbered template
# (article-<N>.html) is one pattern for all its siblings already, and a family there
# only cost the admit script a lookup per URL (admission 19.9k -> 18.4k URLs/s).
_WORDS = re.compile(r"[A-Za-z]{2,}")
# Path with its tokens and numbers abstracted -> (template, its first segment, its filter
# run's base template or ''); family_of's answers by fine pattern. A site's pages share a
# few of each (memo.py).
_TEMPLATES: dict[str, tuple[str, str, str]] = {}
_FAMILIES: dict[str, str] = {}


@dataclass(frozen=True)
class UrlPatterns:
    """The patterns of one URL, finest first; `path_key` names its path for the facet cap
    ('' when the URL has no query)."""

    fine: str
    coarse: str
    host_wide: str
    path_key: str
    family: str = ""  # the fine pattern's siblings (family_of); '' when it has none


def path_template(path: str) -> str:
    """Hex tokens -> <H>, digit runs -> <N>, overlong segments -> <L>, a run of
    segments with one stem (a/a/a, p<N>/p<N>, more/more<N>/more<N>) -> its first + "+":
    a path that grows by a segment per hop stays one pattern. A trailing run of filter
    segments (/f/size-m/color-red/, path_facets.py) -> <F:color,size>, as a query's
    parameters are its sorted names."""
    return _template(path)[0]


def _template(path: str) -> tuple[str, str, str]:
    """(path_template, its first segment, the template of the path before its filter run
    or ''); the segment walk runs once per abstracted path."""
    if _HEX_RUN.search(path) is not None:
        path = _HEX_TOKEN.sub("<H>", path)
    out = _DIGITS.sub("<N>", path)
    known = _TEMPLATES.get(out)
    if known is not None:
        return known
    key = out
    if out.count("<N>") >= 2:
        out = _tokens(out)
    run = facet_run(out)
    pairs = pair_run(out)
    if run.segments and len(pairs[1]) <= run.segments:
        base = _merge_runs(run.base)
        template = base + marker(run) + ("/" if out.endswith("/") else "")
    else:
        base, template = "", _merge_runs(_pair_run(out, pairs))
    first = template.split("/", 2)[1] if "/" in template else ""
    return remember(_TEMPLATES, key, (template, first, base))


def _pair_run(out: str, pairs: tuple[str, tuple[str, ...]]) -> str:
    """`out` with a trailing run of two or more name-value segments as <P>
    (`/shop/shoes/f/tone-red/fit-m/` -> `/shop/shoes/f/<P>/`): filters in the path under
    names of a site's own (or mixed with known ones: a longer run than facet_run's), each
    combination its own path, are one pattern past their first level, which trap feedback
    judges by content (real pages whose slugs read as pairs stay open by being new).
    `pairs`: path_facets.pair_run(out)."""
    base, names = pairs
    if len(names) < 2:
        return out
    return base + "/<P>" + ("/" if out.endswith("/") else "")


def _tokens(out: str) -> str:
    """`out` with each mixed token segment (_MIXED_TOKEN, an extension kept) as <T>."""
    segments = out.split("/")
    for i, segment in enumerate(segments):
        stem, dot, extension = segment.partition(".")
        if stem.count("<N>") >= 2 and _MIXED_TOKEN.fullmatch(stem):
            segments[i] = "<T>" + dot + extension
    return "/".join(segments)


def _merge_runs(out: str) -> str:
    segments: list[str] = []
    stem = None
    for segment in out.split("/"):
        if len(segment) > _LONG_SEGMENT:
            segment = "<L>"
        this = segment.replace("<N>", "")
        # The root ('' before the first "/") is no segment: /2024/05 is not a run of it.
        if len(segments) > 1 and this == stem and segment:
            if not segments[-1].endswith("+"):
                segments[-1] += "+"
            continue
        stem = this
        segments.append(segment)
    return "/".join(segments)


def query_values(query: str) -> dict[str, str]:
    """Each parameter name of a query and its first value, as written (not unquoted)."""
    out: dict[str, str] = {}
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        out.setdefault(name, value)
    return out


def query_names(query: str) -> list[str]:
    """Sorted distinct parameter names (values dropped; the canonicalizer sorted them)."""
    names = {part.partition("=")[0] for part in query.split("&") if part}
    return sorted(_DIGITS.sub("<N>", name) for name in names)


class UrlParts(NamedTuple):
    """A canonical URL split once for admission (patterns, prioritizer); a NamedTuple,
    as immutable as a frozen dataclass and built in a third of its time (once per URL)."""

    host: str
    path: str  # "/" when the URL has none
    query: str
    names: frozenset[str]  # its parameter names, lower-cased


def split_url(url: str) -> UrlParts:
    host, path, query = split_absolute(url)
    return _parts(host, path or "/", query)


def split_canonical(url: str) -> UrlParts:
    """split_url for a canonical URL ("scheme://host[:port]/path[?query]", lower-cased
    host, no userinfo, fragment or trailing dot: canonical.py): string methods instead
    of the regex, on admission's hot path."""
    authority, slash, rest = url.partition("://")[2].partition("/")
    path, _, query = rest.partition("?")
    if authority.startswith("["):
        host = authority[: authority.find("]") + 1]
    else:
        host = authority.partition(":")[0]
    return _parts(host, slash + path if slash else "/", query)


def _parts(host: str, path: str, query: str) -> UrlParts:
    if not query:
        return UrlParts(host, path, query, _NO_NAMES)
    names = frozenset(p.partition("=")[0].lower() for p in query.split("&") if p)
    return UrlParts(host, path, query, names)


def url_patterns(url: str | UrlParts) -> UrlPatterns:
    """The patterns of a canonical URL; a URL without a path counts under the host's "/"."""
    fine, coarse, host_wide, path_key = pattern_strings(
        split_url(url) if isinstance(url, str) else url
    )
    return UrlPatterns(fine, coarse, host_wide, path_key, family_of(fine))


def pattern_path(pattern: str) -> str:
    """A pattern without its host: /diary?d of indigo.test/diary?d."""
    return pattern[pattern.find("/") :]


def families(family: str) -> list[str]:
    """The families a UrlPatterns.family names (family_of joins them by a space)."""
    return family.split(" ") if family else []


def family_of(fine: str) -> str:
    """The fine pattern with its last path segment, when a literal name, abstracted to
    <W>: sibling sections of one template share it (/shop/shoes/?page and
    /shop/bags/?page; /broken-slug and /other-slug at the root), so trap feedback on
    two siblings also judges the third before it is fetched. '' when the last segment
    is abstracted (<N>, <H>, <L>, a "+" run, a numbered template: `article-<N>.html`)
    or the path is the root; a slug with a number (`blue-shoe-<N>`) is a name.

    A path facet's family is every filter page of its section (host and first segment):
    one shop engine makes them all, and a family per listing (/shop/shoes/f/<W>/) cost
    ~6 fetches a category before its own evidence closed it.

    A subdomain's URL has a second family, space-separated: its siblings' pattern (or
    its fine pattern where it has none) under "*.<registered domain>" (domains.py),
    which the pages of every host under that domain judge together: a wildcard-DNS trap
    is a new host per URL."""
    return recall(_FAMILIES, fine, _family)


def _family(fine: str) -> str:
    slash = fine.find("/")
    if slash < 0:
        return ""
    host = fine[:slash]
    domain = registered_domain(host)
    siblings = _siblings(fine)
    if domain == host:
        return siblings
    # The siblings' path where there is one: a record per directory of the domain, not
    # per page (a docs.example.org of word slugs would spend its pattern room on them).
    across = f"*.{domain}{pattern_path(siblings or fine)}"
    return f"{siblings} {across}" if siblings else across


def _siblings(fine: str) -> str:
    base, mark, names = fine.partition("?")
    slash = base.find("/")
    if "<F:" in base:
        first = base[slash:].split("/", 2)[1]
        return f"{base[:slash]}/{'' if first.startswith('<F:') else first + '/'}**/<F>"
    segments = base[slash:].split("/")
    last = len(segments) - 1 if segments[-1] else len(segments) - 2
    name = segments[last] if last > 0 else ""
    if not name or name.endswith("+") or not any(c.isalpha() for c in name):
        return ""
    if "<" in name and len(_WORDS.findall(_MARKER.sub(" ", name.partition(".")[0]))) < 2:
        return ""  # a numbered template (article-<N>.html, page<N>): one pattern already
    segments[last] = "<W>"
    return base[:slash] + "/".join(segments) + mark + names


def number_of(parts: UrlParts) -> int:
    """The URL's counter within its pattern, -1 when it has none: the one digit run of
    its path (/page/7, /p7.html), or when the path has none the only all-digit query
    value (?page=7). Trap feedback learns where a numbered sequence ends from it
    (traps.lua: past the end). A path with several numbers (a date, a version 1.4.10)
    has no single counter; digits inside a hex token are not one."""
    path = parts.path
    if _HEX_RUN.search(path) is not None:
        path = _HEX_TOKEN.sub("", path)
    digits = _DIGITS.findall(path)
    if digits:
        return int(digits[0]) if len(digits) == 1 and len(digits[0]) <= 15 else -1
    if not parts.query:
        return -1
    values = [v for p in parts.query.split("&") if _NUMBER.fullmatch(v := p.partition("=")[2])]
    return int(values[0]) if len(values) == 1 else -1


def pattern_strings(parts: UrlParts) -> tuple[str, str, str, str]:
    """url_patterns' fine, coarse, host-wide pattern and path key, as a tuple (admission
    builds one per URL)."""
    host, query = parts.host, parts.query
    template, first, listing = _template(parts.path)
    # The path key names the listing all of a path's variants show: the path itself for
    # query variants, the path before its filter segments for path facets.
    if not query:
        path_key = f"{host}{listing}" if listing else ""
        return f"{host}{template}", f"{host}/{first}/*", f"{host}/*", path_key
    suffix = "?" + "&".join(query_names(query))
    path_key = f"{host}{listing or template}"
    return f"{host}{template}{suffix}", f"{host}/{first}/*?", f"{host}/*", path_key
