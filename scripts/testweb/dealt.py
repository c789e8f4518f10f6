"""Trap webs dealt at random: the trap families of issue #12 over hosts of random sizes.

traps() is the web the crawl-budget thresholds were chosen on and traps_holdout() one
more deal made by hand; both are single instances. `dealt(seed)` deals a new web per
seed (hosts, shared addresses, sizes, which families and which of their variants), so
a benchmark can ask whether a figure holds on webs nobody looked at (bench_traps.py
--web dealt:SEED). The same seed always deals the same web.
"""

from __future__ import annotations

import random

from .spec import (
    CALENDAR_STYLES,
    FACET_VARIANTS,
    LONG_URL_STYLES,
    MAX_SHOP_CATEGORIES,
    PATH_GROWTH_STYLES,
    SESSION_PARAMS,
    SOFT404_STYLES,
    HostSpec,
    WebSpec,
)

NAMES = ("acme", "civic", "delta", "ember", "fable", "grove", "harbor", "indigo", "juniper")
KINDS = ("shop", "docs", "news")  # what a host mostly is: its real pages' layout


def dealt(seed: int) -> WebSpec:
    """5-8 hosts, some sharing an address, each with 1-4 trap families; in about half
    the webs one host also answers every name under it (a wildcard-DNS trap)."""
    rng = random.Random(f"dealt:{seed}")
    names = rng.sample(NAMES, rng.randint(5, 8))
    hosts = [_host(rng, f"{name}.test", rng.choice(KINDS)) for name in names]
    for host in hosts:  # about one host in three shares an address with another
        if rng.random() < 1 / 3:
            host.ip_group = "shared"
    # A web with no trap at all tells nothing: the first host gets a shop's facets.
    if not any(h.facet_variants for h in hosts):
        hosts[0].shop_categories = max(hosts[0].shop_categories, 3)
        hosts[0].facet_variants = [rng.choice(FACET_VARIANTS)]
    # Drawn last, so the hosts above deal as they did before this family was added.
    if rng.random() < 0.5:
        rng.choice(hosts).subdomain_trap = True
    return WebSpec(hosts=hosts, seed=seed, base_ip=f"127.0.{20 + seed % 200}.1")


def _host(rng: random.Random, name: str, kind: str) -> HostSpec:
    host = HostSpec(name, pages=rng.randint(15, 140), sitemap=rng.random() < 0.5)
    if kind == "shop":
        host.shop_categories = rng.randint(2, MAX_SHOP_CATEGORIES)
        host.shop_products = rng.randint(5, 14)
        host.facet_variants = _some(rng, FACET_VARIANTS, 1, 3)
    elif kind == "docs":
        host.guide = [rng.randint(2, 6) for _ in range(rng.randint(1, 3))]
        host.sources = rng.random() < 0.5
        host.attachments = rng.random() < 0.5
    traps = ["soft404", "session", "calendars", "path_growth", "long_urls"]
    for trap in rng.sample(traps, rng.randint(1, 3)):
        _add_trap(rng, host, trap)
    return host


def _add_trap(rng: random.Random, host: HostSpec, trap: str) -> None:
    if trap == "soft404":
        host.soft404 = rng.choice(SOFT404_STYLES)
    elif trap == "session":
        host.session = rng.choice(sorted(SESSION_PARAMS))
    elif trap == "calendars":
        host.calendars = _some(rng, CALENDAR_STYLES, 1, 2)
    elif trap == "path_growth":
        host.path_growth = _some(rng, PATH_GROWTH_STYLES, 1, 2)
    else:
        host.long_urls = _some(rng, LONG_URL_STYLES, 1, 2)


def _some(rng: random.Random, choices: tuple[str, ...], low: int, high: int) -> list[str]:
    return rng.sample(list(choices), rng.randint(low, min(high, len(choices))))
