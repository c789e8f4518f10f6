"""The parameters canonicalization drops (tracking and session), and session state
servers write into paths. Kept apart from canonical.py so the lists read as a list."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

# Names are matched case-insensitively; a trailing "*" makes a prefix match. Each is a
# click, campaign or e-mail identifier an ad or analytics vendor appends to a link: it
# never selects content (so not `ref` or `source`, which a site may route on: a code
# host's ?ref= names a branch).
DEFAULT_TRACKING_PARAMS: tuple[str, ...] = (
    "utm_*",
    "fbclid",
    "gclid",
    "gbraid",
    "wbraid",
    "dclid",
    "msclkid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
    "yclid",
    "twclid",
    "ttclid",
    "li_fat_id",
    "igshid",
    "srsltid",
    "_hsenc",
    "_hsmi",
    "mkt_tok",
    "oly_enc_id",
    "oly_anon_id",
    "vero_id",
    "rb_clickid",
    "s_kwcid",
)
# "aspsessionid*": classic ASP names it ASPSESSIONIDXXXXXXXX (random suffix).
DEFAULT_SESSION_PARAMS: tuple[str, ...] = (
    "sid",
    "jsessionid",
    "phpsessid",
    "aspsessionid*",
    "sessionid",
)

# Parameters that page a listing: a change in them alone is the listing's next page (its
# own walk, and the way to its older items), not a filter (prioritizer.ends_walk), and a
# paged archive naming its first page as canonical is still a page (directives.py).
PAGE_PARAMS = frozenset(
    ("page", "p", "pg", "paged", "pagenum", "pageno", "page_no", "start", "offset", "from")
)

# Parameters that choose a section or a language of a site, not a filter of a listing: a
# facet sidebar never caps them (facet_sidebar.py). A shop that spells its categories
# `/products?category=shoes` reaches its products through them, unlike a filter page,
# which lists a subset of what its listing lists.
SECTION_PARAMS = frozenset(
    ("category", "categories", "cat", "section", "topic", "tag", "tags", "type", "dept",
     "department", "collection", "lang", "language", "locale")
)  # fmt: skip
# Parameters that say which page of a site a URL is (paging, sections, languages): never
# a learned noise parameter (noise.py), never a facet sidebar's filter (facet_sidebar.py).
PLACE_PARAMS = PAGE_PARAMS | SECTION_PARAMS

# ASP.NET's cookieless state: a path segment of letter(value) pairs in parentheses,
# `/(S(lit3py55t21z5v55vlm25s55))/`, `/(X(1)S(...))/`, `/(A(...)S(...)F(...))/` (session,
# anonymous id, forms ticket), anywhere under the application's root. Dropped with the
# session parameters: every visit without a cookie mints a new one.
_ASPNET_STATE = re.compile(r"/\((?:[A-Za-z]\([A-Za-z0-9_\-!*.]*\))+\)(?=/|$)")


def strip_aspnet_state(path: str) -> str:
    """`path` without ASP.NET's cookieless state segments ("/" if nothing is left)."""
    return _ASPNET_STATE.sub("", path) or "/"


def param_matcher(names: Iterable[str]) -> Callable[[str], bool]:
    """Whether a parameter name is one of `names` (case-insensitive; "x*": a prefix)."""
    exact = frozenset(n.lower() for n in names if not n.endswith("*"))
    prefixes = tuple(n[:-1].lower() for n in names if n.endswith("*"))
    if not exact and not prefixes:
        return lambda name: False

    def matches(name: str) -> bool:
        name = name.lower()
        return name in exact or (bool(prefixes) and name.startswith(prefixes))

    return matches
