"""Self-extending links: a URL that only grows its parent's URL in place.

A template that links a longer copy of the page's own URL generates a URL space without
end, one step per hop: a related-search box that appends a word to the query
(?q=a -> ?q=a+b -> ?q=a+b+c), a slug that grows (/filter/a -> /filter/a-b -> ...), a
relative link that repeats a segment (/a/ -> /a/a/ -> /a/a/a/, /more/ -> /more/more2/,
/p1 -> /p1/p2). Each hop is a new URL of a new shape (the length changes), so neither
URL-seen nor the per-pattern cap stops it, and the length guard only after ~2 KB.

A site's hierarchy also extends its parent's URL (/docs/ -> /docs/guide/), but with a new
name: only growth *in place* counts here (a longer value of the same query parameter, a
longer last segment, or added segments with the last one's stem), so a hierarchy's next
level is never taken for it. Pagination (?page=1 -> ?page=12) grows by digits only,
which does not count either. The prioritizer charges PRIORITY_GROWTH_PENALTY per such
hop and ends a walk whose score has sunk to 0 (Prioritizer.ends_walk).
"""

from __future__ import annotations

from extensions.admission.patterns import UrlParts, query_values

# What appended words are joined with: a value or segment grown by digits alone is a
# counter (?page=1 -> ?page=12, /item/1 -> /item/12), not a growing template.
_JOINERS = frozenset("-_+.,~ %")


def grows(parts: UrlParts, parent: UrlParts) -> bool:
    """Does the URL only extend its parent's (same host), in the query or the path?"""
    if parent.host != parts.host:
        return False
    if parts.query and parent.query and parts.path == parent.path:
        return _query_grows(parts.query, parent.query)
    if parts.query or parent.query:
        return False
    return _path_grows(parts.path, parent.path)


def _extends(longer: str, shorter: str) -> bool:
    """`longer` is `shorter` with words appended: a joiner, then a word (a number alone
    is a sibling: /my-post -> /my-post-2)."""
    return (
        bool(shorter)
        and len(longer) > len(shorter) + 1
        and longer.startswith(shorter)
        and longer[len(shorter)] in _JOINERS
        and any(c.isalpha() for c in longer[len(shorter) + 1 :])
    )


def _query_grows(query: str, parent_query: str) -> bool:
    """Same parameter names, and one value is its parent's value with words appended."""
    values = query_values(query)
    parent_values = query_values(parent_query)
    if values.keys() != parent_values.keys():
        return False
    return any(_extends(values[name], parent_values[name]) for name in values)


def _path_grows(path: str, parent_path: str) -> bool:
    stem_path = parent_path.rstrip("/")
    if len(path) <= len(stem_path) + 1 or not path.startswith(stem_path):
        return False  # most links: a sibling or elsewhere on the site
    segments = [s for s in path.split("/") if s]
    parents = [s for s in parent_path.split("/") if s]
    if not parents or len(segments) < len(parents):
        return False
    if len(segments) == len(parents):  # the last segment grows in place
        return segments[:-1] == parents[:-1] and _extends(segments[-1], parents[-1])
    if segments[: len(parents)] != parents:
        return False
    # Added segments: the first one repeats the last one's stem (a/a, more/more2, p1/p2).
    stem = _stem(parents[-1])
    return bool(stem) and _stem(segments[len(parents)]) == stem


def _stem(segment: str) -> str:
    """A segment without its digits, lower-cased: '' for a number (a date's /2024/05)."""
    return "".join(c for c in segment.lower() if not c.isdigit())
