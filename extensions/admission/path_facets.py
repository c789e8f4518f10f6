"""Filters written as path segments: /shop/shoes/f/color-red/size-m/ (issue #12's facets).

Many shop engines put faceted navigation in the path instead of the query, a segment
per filter ("<name>-<value>"). Each combination is then a path of its own, so the
query machinery never saw it: the facet cap per path, the patterns' sorted parameter
names, the prioritizer's facet penalty. A crawl of such a shop spent 84-129 requests
a host on filter pages (bench_traps.py --web dealt:2). A trailing run of such segments
is read here as the query it stands for. The path before the run is the listing's
path, and the run's names are its parameters.

A segment is a filter when its name is one of FILTER_NAMES and its value is a single
short token: "color-red", "size_xl", "sort:price". "page-2" counts only inside a run
that has a filter. A real page whose slug starts like one ("style-guide") reads as a
one-filter run. That groups it with its like for trap feedback, which judges by
content. Only a run of two or more segments counts towards the facet cap, which does
not judge by content. A value with a dot ("style-guide.html") is never a filter.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from extensions.admission.memo import recall

# Filter names of shop engines' path facets (PRIORITY_FACET_PARAMS is the query's list,
# a setting; this one is fixed, because patterns made from it are stored in Redis).
FILTER_NAMES = frozenset(
    ("color", "colour", "size", "brand", "sort", "sortby", "order", "orderby", "price",
     "material", "style", "filter", "view", "layout", "display", "limit", "show", "mode",
     "format", "fit", "gender", "rating", "width", "length")
)  # fmt: skip
PAGINATION = frozenset(("page", "p", "pg"))
# name, separator, value: a digit run may already be <N> (patterns.py abstracts first).
_SEGMENT = re.compile(r"([A-Za-z]{1,16})[-_:=~]((?:[A-Za-z0-9]|<N>){1,24})")
_RUNS: dict[str, FacetRun] = {}


class FacetRun(NamedTuple):
    """A path's trailing run of filter segments."""

    base: str  # the path before the run, ending in "/"; '' when the path has no run
    names: tuple[str, ...]  # the run's distinct names, lower-cased and sorted
    segments: int  # how many segments the run has (0: none)


NO_RUN = FacetRun("", (), 0)


def facet_run(path: str) -> FacetRun:
    """The trailing filter run of a path (memoised: a page's links share their paths)."""
    return recall(_RUNS, path, _facet_run)


def _facet_run(path: str) -> FacetRun:
    segments = path.split("/")
    end = len(segments) - 1 if segments[-1] else len(segments) - 2  # past a trailing "/"
    names: list[str] = []
    start = end
    while start > 0:
        m = _SEGMENT.fullmatch(segments[start])
        if m is None:
            break
        name = m.group(1).lower()
        if name not in FILTER_NAMES and name not in PAGINATION:
            break
        names.append(name)
        start -= 1
    if not names or PAGINATION.issuperset(names):
        return NO_RUN
    base = "/".join(segments[: start + 1]) + "/"
    return FacetRun(base, tuple(sorted(set(names))), len(names))


def pair_run(path: str) -> tuple[str, tuple[str, ...]]:
    """(the path before its trailing segments spelled as name-value pairs, their names
    lower-cased, last first), whatever the names ("tone-red/fit-m/"; a slug such as
    "getting-started" reads as one too)."""
    base, pairs = pair_segments(path)
    return base, tuple(name for name, _ in pairs)


def pair_segments(path: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """pair_run with each pair's value: (base, ((name, value), ...), last first)."""
    segments = path.rstrip("/").split("/")
    pairs: list[tuple[str, str]] = []
    while len(segments) > 1 and (m := _SEGMENT.fullmatch(segments[-1])) is not None:
        pairs.append((m.group(1).lower(), m.group(2)))
        segments.pop()
    return "/".join(segments), tuple(pairs)


def may_pair(path: str) -> bool:
    """A cheap pre-check for pair_segments: the last segment has a separator, no dot."""
    last = path.rstrip("/").rpartition("/")[2]
    return "." not in last and any(sep in last for sep in "-_:=~")


def filter_segment(segment: str) -> tuple[str, str] | None:
    """(name, value) of a path segment that is a filter ("color-red"; not paging's
    "page-2"), else None."""
    m = _SEGMENT.fullmatch(segment)
    if m is None or m.group(1).lower() not in FILTER_NAMES:
        return None
    return m.group(1).lower(), m.group(2)


def marker(run: FacetRun) -> str:
    """The run's segment in a path template: <F:color,size> (order and values dropped)."""
    return "<F:" + ",".join(run.names) + ">"


def refines(run: FacetRun, parent_path: str) -> bool:
    """The URL adds a filter segment to its parent's already filtered listing."""
    if not run.segments:
        return False
    parent = facet_run(parent_path)
    return parent.base == run.base and 0 < parent.segments < run.segments
