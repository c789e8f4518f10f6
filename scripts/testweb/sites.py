"""Deterministic site generation for the local test web (pure: no sockets, no files).

``Site(spec, port)`` answers "what does host H serve at path P" (``route``/``respond``)
and "which URLs should a polite, trap-guarded crawler fetch" (``pages``). Content and
links come from RNGs seeded on (spec.seed, host, path), so bytes are identical across
runs for the same port. Each host has a small regex route table so new behaviours
(feeds, sitemaps, slow endpoints...) are one extra row, not a rewrite. The resources
are in ``routes.py``, their prose in ``prose.py``, the expected-page walk in
``expected.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import hashlib
import posixpath
import random
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import formatdate
from urllib.parse import urlsplit

from .changes import ChangeClock
from .decorate import decorate
from .expected import polite_pages, token_free
from .families import Extras
from .prose import render, seeded_rng
from .routes import (
    HTML,
    LAST_MODIFIED,
    NON_PAGE_KINDS,
    ORPHAN,
    SITEMAP_INDEX,
    TRAP_ENTRIES,
    TRAP_KINDS,
    UTM_QUERY,
    Link,
    Response,
    Route,
    gzip_bomb,
    original,
    override_for,
    plain,
    text_headers,
)
from .spec import HostSpec, WebSpec, assign_ips
from .subdomains import HOME_LINKS, Subdomains

Handler = Callable[[HostSpec, re.Match[str]], Route | None]


class Site:
    """The generated web for one spec bound to one port."""

    def __init__(self, spec: WebSpec, port: int) -> None:
        self.spec = spec
        self.port = port
        self.hosts = assign_ips(spec)
        self._specs = {h.name: h for h in spec.hosts}
        self._names = [h.name for h in spec.hosts]
        self._index = {name: i for i, name in enumerate(self._names)}
        self._tables = {h.name: self._route_table(h) for h in spec.hosts}
        self._extras = {
            h.name: Extras(h, functools.partial(self.url, h.name), spec.seed) for h in spec.hosts
        }
        self.subdomains = Subdomains(spec.hosts, self.url, spec.seed)
        # Time 0 of the change processes: the spec's, else now (the server's start).
        epoch = spec.epoch or time.time()
        self.clocks = {
            (h.name, path): ChangeClock(spec.seed, h.name, path, rate, epoch)
            for h in spec.hosts
            for path, rate in h.change_rates.items()
        }

    def version(self, host: str, path: str, at: float | None = None) -> int | None:
        """The live version of a changing page at `at` (now), None for a static one."""
        clock = self.clocks.get((host, urlsplit(path).path))
        return None if clock is None else clock.version_at(time.time() if at is None else at)

    # ---- addressing --------------------------------------------------------------
    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def seeds(self) -> list[str]:
        return [self.url(name) for name in self._names]

    def latency(self, host: str) -> float:
        spec = self._specs.get(host)
        return spec.latency_ms / 1000.0 if spec else 0.0

    def trap_prefixes(self) -> list[str]:
        return [
            self.url(h.name, prefix)
            for h in self.spec.hosts
            if h.trap
            for prefix in ("/calendar/", "/trap/")
        ]

    # ---- routing -----------------------------------------------------------------
    def _route_table(self, h: HostSpec) -> list[tuple[re.Pattern[str], Handler]]:
        table: list[tuple[str, Handler]] = [
            (r"/", lambda h, m: self._page(h, "/")),
            (r"/page/(\d+)", self._numbered_page),
            (r"/robots\.txt", lambda h, m: self._robots(h)),
        ]
        if h.redirect:
            table.append((r"/old", lambda h, m: self._redirect(h, "old")))
            table.append((r"/elsewhere", lambda h, m: self._redirect(h, "elsewhere")))
        if h.private:
            table.append((r"/private/secret", lambda h, m: self._page(h, m.group(0))))
        if h.large_body_kb > 0:
            table.append((r"/large", lambda h, m: self._page(h, "/large")))
        if h.gzip_bomb_mb > 0:
            table.append((r"/bomb", lambda h, m: gzip_bomb(h.gzip_bomb_mb)))
        if h.near_duplicates:
            table.append((r"/copy/(\d+)", self._copy))
        if h.sitemap:
            table.append((re.escape(SITEMAP_INDEX), lambda h, m: self._sitemap_index(h)))
            table.append((r"/sitemap\.xml", lambda h, m: self._sitemap(h)))
            table.append((re.escape(ORPHAN), lambda h, m: self._page(h, ORPHAN)))
        if h.trap:
            table.append((r"/calendar/(\d{4})/(\d{2})", self._calendar))
            table.append((r"/trap(?:/a)+", self._deep_trap))
        return [(re.compile(pattern), handler) for pattern, handler in table]

    def route(self, host: str, path: str) -> Route:
        """Resolve ``path`` (query ignored: aliases serve the same page) on ``host``."""
        spec = self._specs.get(host)
        if spec is None:
            return self.subdomains.route(host, path) or Route(
                "missing", 404, body=b"unknown host\n"
            )
        bare = urlsplit(path).path or "/"
        override = override_for(spec, path)
        if override and override[2] is None:  # permanent: part of the link graph
            status, headers, _ = override
            return Route(
                "override",
                status,
                headers=tuple(headers.items()),
                location=headers.get("Location"),
                body=f"status {status}\n".encode(),
            )
        extras = self._extras[host]
        for pattern, handler in self._tables[host]:
            match = pattern.fullmatch(bare)
            if match and (found := handler(spec, match)) is not None:
                if bare == "/" and spec.subdomain_trap:
                    made_up = self.subdomains.made_up(host, host, HOME_LINKS)
                    found = dataclasses.replace(found, links=found.links + tuple(made_up))
                return extras.finish(bare, path, found)
        found = extras.lookup(bare, path.partition("?")[2]) if extras.table else None
        if found is None and spec.soft404 == "home":
            return self._home_for_unknown(host)
        return extras.finish(bare, path, found)

    def _home_for_unknown(self, host: str) -> Route:
        """The "home" soft 404: an unknown path gets the home page's bytes, as a single-page
        app's server does (nginx `try_files $uri /index.html`). Its relative links resolve
        under the unknown path, so each answer names more unknown paths."""
        home = self.route(host, "/")
        body = render(self.spec.seed, host, "/", home)
        return dataclasses.replace(home, kind="soft404", body=body, headers=HTML)

    def respond(self, host: str, path: str, hit: int = 0, at: float | None = None) -> Response:
        """Bytes to send; ``hit`` = earlier requests of this (host, path) for overrides,
        ``at`` = the time asked about (None: now)."""
        spec = self._specs.get(host)
        override = override_for(spec, path) if spec is not None else None
        if override and override[2] is not None and hit < override[2]:  # transient failure
            status, headers, _ = override
            return Response(status, text_headers(headers), f"status {status}\n".encode())
        route = self.route(host, path)
        headers = dict(route.headers)
        if route.location:
            headers["Location"] = route.location
        url = functools.partial(self.url, host)
        if route.body is not None:
            body = decorate(self.spec, spec, url, path, route, route.body)
            return Response(route.status, {**text_headers({}), **headers}, body)
        version = self.version(host, path, at)
        body = render(self.spec.seed, host, path, route, version or 0)
        body = decorate(self.spec, spec, url, path, route, body)
        headers["Content-Type"] = "text/html; charset=utf-8"
        if spec is not None and (spec.validators or version is not None):
            headers["ETag"] = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
            headers["Last-Modified"] = self._last_modified(host, path, version)
        return Response(route.status, headers, body, version)

    def _last_modified(self, host: str, path: str, version: int | None) -> str:
        if version is None:
            return LAST_MODIFIED
        changed = self.clocks[(host, urlsplit(path).path)].changed_at(version)
        return formatdate(changed, usegmt=True)

    # ---- route handlers ----------------------------------------------------------
    def _numbered_page(self, h: HostSpec, m: re.Match[str]) -> Route | None:
        n = int(m.group(1))
        # Reject /page/01 too: one canonical spelling per page keeps `pages` exact.
        return self._page(h, m.group(0)) if 1 <= n <= h.pages and str(n) == m.group(1) else None

    def _copy(self, h: HostSpec, m: re.Match[str]) -> Route | None:
        n = int(m.group(1))
        ok = h.pages and 1 <= n <= h.near_duplicates and str(n) == m.group(1)
        return self._page(h, m.group(0)) if ok else None

    def _robots(self, h: HostSpec) -> Route:
        if h.robots is None:
            return Route("missing", 404, body=b"no robots.txt\n")
        if isinstance(h.robots, int):
            retry = (("Retry-After", "1"),) if h.robots in (429, 503) else ()
            return Route("robots", h.robots, body=b"robots unavailable\n", headers=retry)
        text = h.robots
        if h.sitemap:
            text = text.rstrip("\n") + f"\nSitemap: {self.url(h.name, SITEMAP_INDEX)}\n"
        return Route("robots", 200, body=text.encode(), headers=plain())

    def _sitemap_index(self, h: HostSpec) -> Route:
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<sitemap><loc>{self.url(h.name, '/sitemap.xml')}</loc></sitemap></sitemapindex>\n"
        )
        headers = (("Content-Type", "application/x-gzip"),)
        return Route("sitemap", 200, body=gzip.compress(body.encode(), mtime=0), headers=headers)

    def sitemap_paths(self, h: HostSpec) -> list[str]:
        """The real pages a sitemap host lists: /page/N, the orphan, its families' pages."""
        paths = [f"/page/{n}" for n in range(1, h.pages + 1)] + [ORPHAN]
        return paths + self._extras[h.name].real

    def _sitemap(self, h: HostSpec) -> Route:
        entries = "".join(
            f"<url><loc>{self.url(h.name, p)}</loc>"
            f"<lastmod>{self._lastmod(h.name, p)}</lastmod></url>"
            for p in self.sitemap_paths(h)
        )
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>\n'
        )
        return Route(
            "sitemap", 200, body=body.encode(), headers=(("Content-Type", "application/xml"),)
        )

    def _lastmod(self, host: str, path: str) -> str:
        """A sitemap's <lastmod>: when a changing page last changed, as real sites say."""
        clock = self.clocks.get((host, path))
        if clock is None:
            return "2024-01-01"
        changed = clock.changed_at(clock.version_at(time.time()))
        return datetime.fromtimestamp(changed, UTC).isoformat(timespec="seconds")

    def _redirect(self, h: HostSpec, which: str) -> Route:
        if which == "old" or len(self._names) == 1:
            target = self.url(h.name, "/page/1" if h.pages else "/")
            return Route("redirect", 301, location=target, body=b"moved\n")
        other = self._names[(self._index[h.name] + 1) % len(self._names)]
        return Route("redirect", 302, location=self.url(other), body=b"found\n")

    def _calendar(self, h: HostSpec, m: re.Match[str]) -> Route | None:
        year, month = int(m.group(1)), int(m.group(2))
        if not 1 <= month <= 12:
            return None
        nxt = (year + month // 12, month % 12 + 1)
        month_path = f"{nxt[0]:04d}/{nxt[1]:02d}"
        links = (
            Link(self.url(h.name, f"/calendar/{month_path}"), f"../{month_path}"),
            Link(self.url(h.name), "/"),
        )
        return Route("trap", title=f"Calendar {year:04d}-{month:02d}", links=links)

    def _deep_trap(self, h: HostSpec, m: re.Match[str]) -> Route:
        # Relative "a/a" from /trap/a/.../a resolves one level deeper, forever.
        deeper = self.url(h.name, m.group(0) + "/a")
        title = f"Trap depth {m.group(0).count('/a')}"
        return Route("trap", title=title, links=(Link(deeper, "a/a"),))

    def _page(self, h: HostSpec, path: str) -> Route:
        # A near-duplicate copy has its original's links and prose (see _render).
        rng = seeded_rng(self.spec.seed, "links", h.name, original(path))
        targets = self._root_targets(h, rng) if path == "/" else self._page_targets(h, path, rng)
        use_base = path != "/" and rng.random() < 0.3
        base_dir = "/" if use_base else posixpath.dirname(path).rstrip("/") + "/"
        links = tuple(
            Link(self.url(host or h.name, p), _href(self, h, host, p, base_dir, rng))
            for host, p in targets
        )
        title = f"{h.name} {original(path)}"
        base = self.url(h.name) if use_base else None
        size = h.large_body_kb if path == "/large" else 0
        return Route("page", title=title, links=links, base_href=base, size_kb=size)

    # ---- link targets: (other_host or "", path) ----------------------------------
    def _root_targets(self, h: HostSpec, rng: random.Random) -> list[tuple[str, str]]:
        out = [("", f"/page/{n}") for n in range(1, min(h.pages, 5) + 1)]
        if h.trap:
            out += [("", p) for p in TRAP_ENTRIES]
        if h.redirect:
            out += [("", "/old"), ("", "/elsewhere")]
        if h.private:
            out.append(("", "/private/secret"))
        if h.large_body_kb > 0:
            out.append(("", "/large"))
        if h.gzip_bomb_mb > 0:
            out.append(("", "/bomb"))
        if h.pages:
            out += [("", f"/copy/{n}") for n in range(1, h.near_duplicates + 1)]
        if h.utm_alias and h.pages:
            out.append(("", f"/page/1?{UTM_QUERY}"))
        if len(self._names) > 1:  # ring of roots + one random cross-host page
            out.append((self._names[(self._index[h.name] + 1) % len(self._names)], "/"))
            out.append(self._cross_target(h, rng))
        return out

    def _page_targets(self, h: HostSpec, path: str, rng: random.Random) -> list[tuple[str, str]]:
        m = re.fullmatch(r"/page/(\d+)", path)
        n = int(m.group(1)) if m else 0
        out = [("", "/")]
        if m and n < h.pages:
            out.append(("", f"/page/{n + 1}"))  # the chain that makes every page reachable
        out += [("", f"/page/{rng.randint(1, h.pages)}") for _ in range(3) if h.pages]
        if h.pages and rng.random() < 0.3:
            out.append(("", f"/page/{rng.randint(1, h.pages)}#section-2"))
        if h.utm_alias and n and n % 4 == 0:
            out.append(("", f"/page/1?{UTM_QUERY}"))
        if len(self._names) > 1 and rng.random() < 0.4:
            out.append(self._cross_target(h, rng))
        return out

    def _cross_target(self, h: HostSpec, rng: random.Random) -> tuple[str, str]:
        # Index arithmetic instead of filtering the name list: O(1) for 1000s of hosts.
        i = rng.randrange(len(self._names) - 1)
        other = self._names[i + 1 if i >= self._index[h.name] else i]
        pages = self._specs[other].pages
        return (other, f"/page/{rng.randint(1, pages)}" if pages else "/")

    # ---- what a polite crawler should fetch ----------------------------------------
    def pages(self) -> list[str]:
        """What a polite, trap-guarded crawler fetches (expected.polite_pages)."""
        # A crawler that reads sitemaps reaches the orphan pages they list too.
        orphans = [self.url(h.name, ORPHAN) for h in self.spec.hosts if h.sitemap]
        return polite_pages(self.seeds() + orphans, self.spec.hosts, self.port, self.route)

    def real_pages(self) -> list[str]:
        """The real HTML pages reachable from the seeds and sitemaps, obeying robots: no
        trap, soft-404, facet, session duplicate or non-page file; redirects followed but
        not listed. A session link counts as its token-free page (the sitemaps list them)."""
        hosts = self.spec.hosts
        starts = self.seeds() + [
            self.url(h.name, p) for h in hosts if h.sitemap for p in self.sitemap_paths(h)
        ]
        canonical = token_free(hosts)
        return polite_pages(starts, hosts, self.port, self.route, ("page",), canonical)

    def kind(self, url: str) -> str:
        """The route kind this web serves at `url` ("foreign" off the web)."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port != self.port or (
            host not in self._specs and self.subdomains.parent_of(host) is None
        ):
            return "foreign"
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return self.route(parts.hostname, path).kind

    def is_trap(self, url: str) -> bool:
        """True for every URL of a trap family: the old calendar and /trap/a, facet pages,
        soft 404s (and their redirects), session duplicates, calendars, growing paths,
        long URLs."""
        return self.kind(url) in TRAP_KINDS

    def is_non_page(self, url: str) -> bool:
        """True for the linked non-HTML files: source listings, the image, PDF and zip."""
        return self.kind(url) in NON_PAGE_KINDS


def _href(site: Site, h: HostSpec, host: str, path: str, base_dir: str, rng: random.Random) -> str:
    """Spell a link the way real sites mix styles: absolute, root-relative, relative, ../."""
    if host:
        return site.url(host, path)  # cross-host links must be absolute
    style = rng.choice(("absolute", "root", "relative", "dotdot"))
    if style == "absolute":
        return site.url(h.name, path)
    if style == "root" or path == "/" or "?" in path:
        return path
    depth = base_dir.strip("/").count("/") + 1 if base_dir != "/" else 0
    if style == "dotdot" and depth:
        return "../" * depth + path.lstrip("/")
    frag = path.find("#")
    bare, tail = (path, "") if frag < 0 else (path[:frag], path[frag:])
    return posixpath.relpath(bare, base_dir) + tail
