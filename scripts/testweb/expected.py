"""The URLs a polite, trap-guarded crawler should fetch from a test web: the oracle the
integration tests compare a crawl against (``Site.pages``)."""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from protego import Protego

from .routes import Route
from .spec import SESSION_PARAMS, HostSpec

if TYPE_CHECKING:
    from .sites import Site

RouteLookup = Callable[[str, str], Route]  # (host, path) -> what the site serves there


def normalize(url: str, drop: frozenset[str] = frozenset()) -> str:
    """Drop the fragment, utm_* parameters and `drop` names: the aliases a crawler should
    collapse (`drop`: the session parameters of a web that has them)."""
    parts = urlsplit(url)
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, True)
        if not k.startswith("utm_") and k not in drop
    ]
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", urlencode(query), ""))


def token_free(hosts: Iterable[HostSpec]) -> Callable[[str], str]:
    """normalize() with the session parameters of `hosts` dropped too."""
    drop = frozenset(SESSION_PARAMS[h.session] for h in hosts if h.session)
    return functools.partial(normalize, drop=drop)


def robots_checker(h: HostSpec) -> Callable[[str], bool]:
    # RFC 9309: 4xx robots = no rules; unreachable (5xx, and 429 like Google) = disallow all.
    if isinstance(h.robots, int):
        no_rules = 400 <= h.robots < 500 and h.robots != 429
        return lambda url: no_rules
    if h.robots is None:
        return lambda url: True
    parser = Protego.parse(h.robots)
    return lambda url: bool(parser.can_fetch(url, "*"))


def polite_pages(
    starts: Iterable[str],
    hosts: Iterable[HostSpec],
    port: int,
    route: RouteLookup,
    listed: tuple[str, ...] = ("page", "trap"),
    canonical: Callable[[str], str] = normalize,
) -> list[str]:
    """BFS from `starts` over canonical links, obeying robots and guarding traps.

    Redirects are followed but not listed; 200 routes of a `listed` kind are listed
    (old trap pages only when linked from a page: the entry), and only page links are
    followed.
    """
    robots = {h.name: robots_checker(h) for h in hosts}
    prefix = "http://"
    seen: set[str] = set()
    queue = deque(starts)
    result: list[str] = []
    while queue:
        url = queue.popleft()
        if "#" in url or "?" in url:  # fast path: most links are already canonical
            url = canonical(url)
        if url in seen:
            continue
        seen.add(url)
        # Cheap split: every internal URL is spelled http://host:port/path by Site.url().
        netloc, _, path = url.removeprefix(prefix).partition("/")
        host, _, port_text = netloc.partition(":")
        if not url.startswith(prefix) or host not in robots or port_text != str(port):
            continue
        if not robots[host](url):
            continue
        found = route(host, "/" + path)
        if found.location and 300 <= found.status < 400:
            if found.kind != "redirect_trap":  # a trap's chain never ends
                queue.append(found.location)
        elif found.kind in listed and found.status == 200:
            result.append(url)
            if found.kind == "page":
                queue.extend(link.target for link in found.links)
    return result


def dead_links(site: Site, real_pages: Iterable[str]) -> set[str]:
    """The broken links `real_pages` of `site` carry (soft404.py's broken_links; its
    Site.real_pages, which the caller has), token-free: a crawler fetches each once to
    tell that it is dead."""
    canonical = token_free(site.spec.hosts)
    found = set()
    for url in real_pages:
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        for link in site.route(parts.hostname or "", path).links:
            if site.kind(link.target) == "soft404":
                found.add(canonical(link.target))
    return found
