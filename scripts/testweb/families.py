"""The opt-in families of one host (issue #12) joined into what Site needs: extra route
rows, the real pages' added links (family entries on "/", files, broken links, generator
pages, session tokens), the fallback for unknown paths and the sitemap rows.

Kept out of ``sites.py`` so a host without the new flags costs one boolean per lookup and
its bytes stay exactly what they were before the families existed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Protocol
from urllib.parse import parse_qsl

from .alternates import Alternates
from .endless import Endless
from .files import Files
from .generator import Generator
from .guide import Guide
from .redirects import RedirectTraps
from .routes import FamilyHandler, Link, Route, UrlFor, with_param
from .shop import Shop
from .soft404 import Soft404
from .spec import SESSION_PARAMS, HostSpec

MISSING = Route("missing", 404, body=b"not found\n")


class Family(Protocol):
    def table(self) -> list[tuple[str, FamilyHandler]]: ...
    def entries(self) -> list[str]: ...
    def real_paths(self) -> list[str]: ...


class Extras:
    """Routes and decorations of the trap families, non-page files and guide of one host."""

    def __init__(self, h: HostSpec, url: UrlFor, seed: int) -> None:
        self.h, self.url, self.seed = h, url, seed
        self.files = Files(h, url, seed)
        self.generator = Generator(h, url, seed)
        self.redirects = RedirectTraps(h, url, seed)
        families: list[Family] = [self.files, Endless(h, url, seed), self.generator]
        families.append(self.redirects)
        if h.shop_categories:
            families.append(Shop(h, url, seed))
        if h.guide:
            families.append(Guide(h, url))
        self.table = [(re.compile(p), fn) for f in families for p, fn in f.table()]
        self.entries = [p for f in families for p in f.entries()]
        self.real = [p for f in families for p in f.real_paths()]
        self.soft404 = Soft404(h, url, seed) if h.soft404 else None
        self.session = SESSION_PARAMS.get(h.session)
        self.alternates = Alternates(h, url, seed) if h.alternates else None
        self.prefix = url("/")
        self.active = bool(self.table or self.soft404 or self.session or self.alternates)

    def lookup(self, bare: str, query: str) -> Route | None:
        for pattern, handler in self.table:
            match = pattern.fullmatch(bare)
            if match and (found := handler(match, query)) is not None:
                return found
        return None

    def finish(self, bare: str, path: str, found: Route | None) -> Route:
        """The route to serve: unknown paths answered by the host's 404 style, real
        pages given the links the families add."""
        if found is None:
            return self.soft404.answer(bare) if self.soft404 else MISSING
        if not self.active or found.kind != "page":
            return found
        extra = [Link(self.url(p), p) for p in self.entries] if bare == "/" else []
        extra += self.files.links(bare)
        extra += self.generator.links(bare)
        extra += self.redirects.links(bare)
        if self.soft404:
            extra += self.soft404.broken_links(bare)
        if self.alternates:
            extra += self.alternates.links(bare)
        route = dataclasses.replace(found, links=found.links + tuple(extra)) if extra else found
        route = self._with_session(route, path) if self.session else route
        if self.alternates and route.kind == "page":
            return self.alternates.view(bare, path.partition("?")[2], route) or route
        return route

    def _with_session(self, route: Route, path: str) -> Route:
        """Every same-host link carries a token minted for this render; a request that
        carries one is a duplicate of the token-free page (kind "session")."""
        assert self.session is not None
        query = path.partition("?")[2]
        incoming = dict(parse_qsl(query, True)).get(self.session)
        if self.h.session == "counter":
            token = str(int(incoming) + 1) if incoming and incoming.isdigit() else "1"
        else:
            digest = hashlib.sha256(f"{self.seed}|session|{self.h.name}|{path}".encode())
            token = digest.hexdigest()[:12]
        links = tuple(
            Link(
                with_param(link.target, self.session, token),
                with_param(link.href, self.session, token),
            )
            if link.target.startswith(self.prefix)
            else link
            for link in route.links
        )
        kind = "session" if incoming is not None else route.kind
        return dataclasses.replace(route, kind=kind, links=links)
