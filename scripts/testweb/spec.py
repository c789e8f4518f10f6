"""Declarative description of the local test web (what hosts exist and how they behave).

Pure data: no I/O beyond optional JSON (de)serialisation helpers. Kept apart from
``sites.py`` so the page generator stays small and the spec can be built by tests,
benchmarks and the CLI without pulling in rendering code.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
DEFAULT_BASE_IP = "127.0.10.1"

# A status override is ``[status, headers]`` or ``[status, headers, times]``: the first
# ``times`` requests of that path get the override (None/absent = every request).
StatusOverride = tuple[int, dict[str, str], int | None]

FACET_VARIANTS = ("shuffled", "tracking", "view", "slugs", "unnamed", "paths")
FACET_NAMED = (*FACET_VARIANTS, "catparam", "paged", "bare")  # by name only, as "chatty" below
# Dealt at random (dealt.py); "chatty" came later and is asked for by name only, so the
# webs dealt before it stay the same.
SOFT404_STYLES = ("links", "short", "themed", "redirect", "home")
SOFT404_NAMED = (*SOFT404_STYLES, "chatty")
# Session style -> its query parameter: names the canonicalizer does not know
# (extensions/admission/canonical.py DEFAULT_SESSION_PARAMS), so only content tells.
SESSION_PARAMS = {"hex": "s", "counter": "visit"}
CALENDAR_STYLES = ("events", "archive", "dated", "compact", "weeks")
# "months" (/calendar/YYYY/mon/) came later: asked for by name only, as "chatty".
CALENDAR_NAMED = (*CALENDAR_STYLES, "months")
PATH_GROWTH_STYLES = ("segments", "counter")
LONG_URL_STYLES = ("query", "path")
# Generator traps (generator.py), redirect traps (redirects.py) and alternate views
# (alternates.py), one URL shape each; by name only, as "chatty": dealt.py does not deal
# them, so older webs stay the same.
GENERATOR_STYLES = ("slugs", "ids", "tokens", "query", "dirs", "nav", "deep", "root", "mixed")
REDIRECT_TRAP_STYLES = ("tokens", "counter", "query", "bounce", "slug")
ALTERNATE_STYLES = ("replytocom", "print", "share", "history")
MAX_SHOP_CATEGORIES = 8
MAX_GUIDE_LEVELS = 4


def _check(name: str, values: list[str], allowed: tuple[str, ...]) -> None:
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise ValueError(f"{name}: unknown {unknown}; use any of {list(allowed)}")


@dataclass
class HostSpec:
    """One virtual host (hostname) of the test web."""

    name: str
    # Hosts with equal ip_group share one address (shared hosting); None = own group.
    ip_group: str | None = None
    pages: int = 10
    # Artificial delay before every response: models remote fetch time.
    latency_ms: float = 0.0
    # robots.txt body, None for a 404, or an int status (e.g. 500/503) for a failing robots.
    robots: str | int | None = "User-agent: *\nAllow: /\n"
    trap: bool = False
    redirect: bool = False
    utm_alias: bool = False
    # A linked /private/secret page (pair with a robots.txt disallowing /private/).
    private: bool = False
    # Pages carry ETag/Last-Modified and the server answers conditional requests with 304.
    validators: bool = False
    # > 0: a linked /large page whose body is about this many KiB.
    large_body_kb: int = 0
    # robots.txt names /sitemap_index.xml.gz (gzip) -> /sitemap.xml, which lists the
    # pages and /orphan, a page linked from nowhere else.
    sitemap: bool = False
    # /copy/1..N: near duplicates of /page/1 (one changed line), linked from the root.
    near_duplicates: int = 0
    # /bomb: a gzip-encoded page that inflates to this many MiB (decompression caps).
    gzip_bomb_mb: int = 0
    status_overrides: dict[str, StatusOverride] = field(default_factory=dict)
    # path -> changes per second: the page's prose is rewritten at the times of a
    # Poisson process of that rate (seeded, so tests and benchmarks know every change
    # time: scripts/testweb/changes.py). ETag and Last-Modified follow the changes.
    change_rates: dict[str, float] = field(default_factory=dict)
    # ---- trap families and non-page files (issue #12), all off by default --------
    # /shop/: this many categories of real product pages, and the faceted-filter trap
    # (?color=..&size=..&sort=..&page=..) on every category page.
    shop_categories: int = 0
    shop_products: int = 10
    # Facet link styles, any of FACET_NAMED (shop.py): parameter order, tracking, a view
    # parameter, product slugs, unnamed filters, filters as paths, categories as a parameter.
    facet_variants: list[str] = field(default_factory=list)
    # Unknown paths: "" a real 404; "links", "short", "themed" a 200 "not found" page
    # (with fresh random links, a line, a long themed page; "chatty": themed, plus two
    # suggestions of its own on every answer); "redirect" a 302 home;
    # "home" the home page itself, byte for byte (a single-page app's server).
    soft404: str = ""
    # A per-render session token on every same-host link: "hex" (?s=), "counter" (?visit=).
    session: str = ""
    # Every page names its canonical URL in a <link rel="canonical"> (decorate.py): a real
    # page itself, a filter page its listing, a session copy its token-free page.
    canonical_links: bool = False
    # Endless calendars, any of "events" (/events?year=&month=), "archive" (/archive/Y/M/D/),
    # "dated" (/agenda?date=YYYY-MM-DD), "compact" (/diary?d=YYYYMMDD), "weeks"
    # (/planner/YYYY/week-WW/), "months" (/calendar/YYYY/mon/, the month by its name).
    calendars: list[str] = field(default_factory=list)
    # Endless paths, any of "segments" (/docs/v1/more/more2/), "counter" (/gallery/p1/p2).
    path_growth: list[str] = field(default_factory=list)
    # URLs growing each hop until above 1000 characters: "query" (/search?q=), "path" (/filter/).
    long_urls: list[str] = field(default_factory=list)
    # Fan-out per level of a /guide/ tree of real pages (at most 4 levels), e.g. [4, 5, 8].
    guide: list[int] = field(default_factory=list)
    # /_sources/page-<n>.txt (text/plain) linked from /page/<n>, as Sphinx sites do.
    sources: bool = False
    # An image, a PDF and a zip linked from every real page.
    attachments: bool = False
    # Every name under this host answers a template page linking more made-up names
    # (a wildcard-DNS spider trap); the home page links two (subdomains.py).
    subdomain_trap: bool = False
    # With subdomain_trap: each made-up subdomain's page is prose of its own (a link
    # farm's generated text), not one template: no copy for feedback to see.
    subdomain_prose: bool = False
    # Tarpits (generator.py), any of GENERATOR_STYLES: endless spaces of unique pages,
    # each linking 2-5 new ones: "slugs" (/gen/w-w), "ids" (/item/<n>), "tokens"
    # (/t/<hex>/), "query" (/lookup?term=w+w+w), "dirs" (/lib/w/w.html), "nav" (/wander/w-w,
    # every page also linking /wander/start-1..5).
    generators: list[str] = field(default_factory=list)
    # Redirect traps (redirects.py), any of REDIRECT_TRAP_STYLES: endless redirect chains.
    redirect_traps: list[str] = field(default_factory=list)
    # Alternate views of every real page (alternates.py), any of ALTERNATE_STYLES: reply
    # links per comment, a print view, share buttons, a wiki's edit and history tabs.
    alternates: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # A misspelt variant would silently build a web without that trap.
        _check("facet_variants", self.facet_variants, FACET_NAMED)
        _check("soft404", [self.soft404] if self.soft404 else [], SOFT404_NAMED)
        _check("session", [self.session] if self.session else [], tuple(SESSION_PARAMS))
        _check("calendars", self.calendars, CALENDAR_NAMED)
        _check("path_growth", self.path_growth, PATH_GROWTH_STYLES)
        _check("long_urls", self.long_urls, LONG_URL_STYLES)
        _check("generators", self.generators, GENERATOR_STYLES)
        _check("redirect_traps", self.redirect_traps, REDIRECT_TRAP_STYLES)
        _check("alternates", self.alternates, ALTERNATE_STYLES)
        if not 0 <= self.shop_categories <= MAX_SHOP_CATEGORIES:
            raise ValueError(f"{self.name}: shop_categories must be 0..{MAX_SHOP_CATEGORIES}")
        if len(self.guide) > MAX_GUIDE_LEVELS or any(n < 1 for n in self.guide):
            raise ValueError(f"{self.name}: guide is up to {MAX_GUIDE_LEVELS} fan-outs >= 1")

    @property
    def group(self) -> str:
        return self.ip_group if self.ip_group is not None else f"host:{self.name}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostSpec:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown host spec keys: {sorted(unknown)}")
        kwargs = dict(data)
        overrides = kwargs.pop("status_overrides", None) or {}
        spec = cls(**kwargs)
        spec.status_overrides = {p: _parse_override(v) for p, v in overrides.items()}
        return spec


def _parse_override(value: Any) -> StatusOverride:
    # JSON gives lists; accept [status], [status, headers] and [status, headers, times].
    items = list(value) if isinstance(value, list | tuple) else [value]
    status = int(items[0])
    headers = {str(k): str(v) for k, v in (items[1] if len(items) > 1 else {}).items()}
    times = items[2] if len(items) > 2 else None
    return (status, headers, None if times is None else int(times))


@dataclass
class WebSpec:
    """The whole test web: hosts, their address assignment base and the content seed."""

    hosts: list[HostSpec] = field(default_factory=list)
    base_ip: str = DEFAULT_BASE_IP
    # Seed for the deterministic prose/link generator (same seed -> same bytes).
    seed: int = 0
    # Time 0 of the pages' change processes (epoch s); TestWeb.start sets it when 0.
    epoch: float = 0.0
    # > 0: every calendar, facet, growth, long-URL and /trap/ page gets this many words
    # of prose of its own (routes.OWN_PROSE_KINDS), as real ones list their own events or
    # products: no two are then template copies or near duplicates, so only URL rules
    # and the budget can hold them (bench_traps.py --trap-prose).
    trap_prose: int = 0

    def __post_init__(self) -> None:
        names = [h.name for h in self.hosts]
        if len(names) != len(set(names)):
            raise ValueError("duplicate host names in spec")

    # ---- (de)serialisation -------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WebSpec:
        hosts = [HostSpec.from_dict(h) for h in data.get("hosts", [])]
        return cls(
            hosts=hosts,
            base_ip=data.get("base_ip", DEFAULT_BASE_IP),
            seed=int(data.get("seed", 0)),
            epoch=float(data.get("epoch", 0.0)),
            trap_prose=int(data.get("trap_prose", 0)),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> WebSpec:
        return cls.from_dict(json.loads(text))

    @classmethod
    def load(cls, path: str | Path) -> WebSpec:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    # ---- ready-made webs ---------------------------------------------------------
    @classmethod
    def demo(cls) -> WebSpec:
        """8 hostnames on 5 IPs exercising traps, redirects, aliases and robots rules."""
        allow = "User-agent: *\nAllow: /\n"
        hosts = [
            # Two hostnames sharing one IP.
            HostSpec("alpha.test", "shared2", pages=20, redirect=True, robots=allow),
            HostSpec(
                "beta.test", "shared2", pages=15, utm_alias=True, robots=allow, near_duplicates=3
            ),
            # Three hostnames sharing one IP.
            HostSpec(
                "gamma.test",
                "shared3",
                pages=25,
                private=True,
                utm_alias=True,
                robots="User-agent: *\nDisallow: /private/\n",
            ),
            HostSpec("delta.test", "shared3", pages=10, robots="User-agent: *\nCrawl-delay: 1\n"),
            HostSpec("epsilon.test", "shared3", pages=12, robots=allow),
            HostSpec("zeta.test", pages=18, trap=True, robots=allow),
            HostSpec("eta.test", pages=30, robots=None),
            # Validators (304s); two pages change every ~20 s (the demo's re-visit).
            HostSpec(
                "theta.test",
                pages=14,
                latency_ms=20,
                validators=True,
                robots=allow,
                change_rates={"/page/1": 0.05, "/page/2": 0.05},
            ),
        ]
        return cls(hosts=hosts)

    @classmethod
    def many(
        cls,
        n_hosts: int,
        pages_per_host: int,
        ips: int | None = None,
        latency_ms: float = 0.0,
        skew: float | None = None,
    ) -> WebSpec:
        """Benchmark web: ``n_hosts`` hosts spread round-robin over ``ips`` addresses.

        ``skew`` is a Zipf exponent: host i gets pages proportional to 1/(i+1)**skew,
        keeping the total near ``n_hosts * pages_per_host`` (each host has >= 1 page).
        """
        if n_hosts < 1 or pages_per_host < 1:
            raise ValueError("n_hosts and pages_per_host must be >= 1")
        n_ips = n_hosts if ips is None else max(1, min(ips, n_hosts))
        sizes = _host_sizes(n_hosts, pages_per_host, skew)
        hosts = [
            HostSpec(
                f"h{i:04d}.test",
                ip_group=f"ip{i % n_ips}",
                pages=sizes[i],
                latency_ms=latency_ms,
            )
            for i in range(n_hosts)
        ]
        return cls(hosts=hosts)

    @classmethod
    def shared_ip(cls, n_hosts: int, pages: int, latency_ms: float = 0.0) -> WebSpec:
        """``n_hosts`` hostnames all served from ONE address (per-IP politeness tests)."""
        hosts = [
            HostSpec(f"s{i:03d}.test", ip_group="one", pages=pages, latency_ms=latency_ms)
            for i in range(n_hosts)
        ]
        return cls(hosts=hosts)

    @classmethod
    def large_site(cls) -> WebSpec:
        """One host where ~270 real pages (a 3-level guide, a shop, a sitemap) share the
        host with facets, an archive calendar and themed soft-404s."""
        from .trap_hosts import mixed_host  # it builds HostSpecs: imported late

        return cls(hosts=[mixed_host("mall.test", None)])

    @classmethod
    def traps(cls) -> WebSpec:
        """7 hosts on 5 IPs, every trap family at least twice with different variants
        among ~860 real pages: the crawl-budget acceptance web (Site.real_pages/is_trap)."""
        from .trap_hosts import mixed_host, shop_hosts, text_hosts  # imported late, as above

        return cls(hosts=[mixed_host("mall.test", None), *shop_hosts(), *text_hosts()])

    @classmethod
    def traps_holdout(cls) -> WebSpec:
        """The same trap families dealt out again, to other hosts, sizes and a seed of
        their own, and spellings traps() lacks (facet names outside any list or in path
        segments, a calendar by ?date=): a web the crawl-budget thresholds were not
        chosen on (bench_traps --web holdout), so a figure that holds on traps() alone
        shows a fitted rule."""
        from .trap_hosts import holdout_hosts  # it builds HostSpecs: imported late

        return cls(hosts=holdout_hosts(), seed=7, base_ip="127.0.12.1")


def _host_sizes(n_hosts: int, per_host: int, skew: float | None) -> list[int]:
    if not skew:
        return [per_host] * n_hosts
    weights = [1.0 / (i + 1) ** skew for i in range(n_hosts)]
    total = n_hosts * per_host
    scale = total / sum(weights)
    return [max(1, round(w * scale)) for w in weights]


def assign_ips(spec: WebSpec) -> dict[str, str]:
    """Map hostname -> 127.x address; distinct ip_groups get consecutive addresses.

    Addresses ending in .0 or .255 are skipped when rolling into the next /24 so no
    host sits on a network/broadcast-looking address (confusing in logs and tools).
    """
    base = ipaddress.ip_address(spec.base_ip)
    if base not in LOOPBACK:
        raise ValueError(f"base_ip {spec.base_ip} is not in 127.0.0.0/8")
    group_ip: dict[str, str] = {}
    current = int(base)
    for host in spec.hosts:
        if host.group in group_ip:
            continue
        while current & 0xFF in (0, 255):
            current += 1
        addr = ipaddress.ip_address(current)
        if addr not in LOOPBACK:
            raise ValueError("ran out of 127.0.0.0/8 addresses")
        group_ip[host.group] = str(addr)
        current += 1
    return {h.name: group_ip[h.group] for h in spec.hosts}
