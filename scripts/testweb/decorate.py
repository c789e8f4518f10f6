"""What a rendered body gets on top of its route, each part off by default: words of its
own on a trap page (WebSpec.trap_prose) and a `<link rel="canonical">` (HostSpec
.canonical_links), as the CMSs and shop engines that emit one write it: a real page names
itself, a filter page its listing (query dropped, a path facet's run cut), a session copy
its token-free page, every other trap page itself; "not found" answers name nothing.

Kept out of ``sites.py`` so a web without these flags serves exactly the bytes it did.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit

from .prose import with_own_prose
from .routes import OWN_PROSE_KINDS, TRAP_KINDS, Route
from .shop import TRACKING_PARAM
from .spec import SESSION_PARAMS, HostSpec, WebSpec

# A path facet's marker and run: /shop/shoes/f/color-red/size-m/ names /shop/shoes/.
_PATH_FACETS = re.compile(r"/f/(?:[a-z]+-[a-z0-9]+/)+$")
_SELF_KINDS = (TRAP_KINDS - {"soft404", "facet", "session"}) | {"page"}


def decorate(
    web: WebSpec, h: HostSpec | None, url: Callable[[str], str], path: str, route: Route,
    body: bytes,
) -> bytes:  # fmt: skip
    """`body` of `route` at `path` with what the web's flags add (the same bytes without);
    `url` spells a path of the host."""
    if web.trap_prose and route.kind in OWN_PROSE_KINDS:
        host = urlsplit(url("/")).hostname or ""
        body = with_own_prose(body, web.seed, host, _untracked(path), web.trap_prose)
    if h is not None and h.canonical_links and body.lstrip().startswith(b"<!DOCTYPE html>"):
        target = canonical_path(h, path, route.kind)
        if target is not None:
            tag = f'<link rel="canonical" href="{html.escape(url(target))}">'.encode()
            body = body.replace(b"</head>", tag + b"</head>", 1)
    return body


def canonical_path(h: HostSpec, path: str, kind: str) -> str | None:
    """The path a page of this kind names as its canonical one (None: no tag)."""
    bare, _, query = path.partition("?")
    if kind == "facet":
        if "catparam" in h.facet_variants:  # the category listing: its one parameter
            cat = dict(parse_qsl(query)).get("category", "")
            return f"{bare}?{urlencode([('category', cat)])}"
        return _PATH_FACETS.sub("/", bare)
    if kind == "session":
        name = SESSION_PARAMS.get(h.session)
        kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != name]
        return bare + (f"?{urlencode(kept)}" if kept else "")
    return path if kind in _SELF_KINDS else None


def _untracked(path: str) -> str:
    """`path` without the tracking stamps the web adds (utm_*, a shop's ref=): a stamp
    names where the link was, and the page under it is the same page, its words too."""
    bare, _, query = path.partition("?")
    if not query:
        return path
    pairs = parse_qsl(query, keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if k != TRACKING_PARAM and not k.startswith("utm_")]
    return bare + (f"?{urlencode(kept)}" if kept else "")
