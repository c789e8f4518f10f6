"""The hosts of the crawl-budget webs (WebSpec.traps, traps_holdout, large_site): every
trap family at least twice with different variants beside real pages. Kept out of
``spec.py`` so the spec module stays the data model alone."""

from __future__ import annotations

from .spec import HostSpec


def shop_hosts() -> list[HostSpec]:
    # Two shops on one address: facets with tracking and view parameters, plain facets.
    store = HostSpec("store.test", "shops", pages=30, shop_categories=5, shop_products=12)
    store.facet_variants, store.soft404 = ["tracking", "view"], "short"
    market = HostSpec("market.test", "shops", pages=20, shop_categories=3)
    market.calendars, market.long_urls = ["events"], ["query"]
    return [store, market]


def text_hosts() -> list[HostSpec]:
    news = HostSpec("news.test", pages=120, session="hex", sitemap=True, soft404="links")
    news.calendars = ["events", "archive"]
    forum = HostSpec("forum.test", pages=100, session="counter", sitemap=True)
    forum.soft404, forum.long_urls = "redirect", ["path"]
    # Two documentation hosts on one address: the old traps and both path growths.
    docs = HostSpec("docs.test", "docs", pages=80, trap=True, guide=[3, 4, 5], sources=True)
    docs.attachments, docs.path_growth = True, ["segments", "counter"]
    wiki = HostSpec("wiki.test", "docs", pages=60, path_growth=["counter"], sources=True)
    wiki.long_urls = ["query", "path"]
    return [news, forum, docs, wiki]


def mixed_host(name: str, ip_group: str | None) -> HostSpec:
    return HostSpec(
        name,
        ip_group,
        pages=40,
        guide=[4, 5, 8],
        shop_categories=4,
        facet_variants=["shuffled", "slugs"],
        calendars=["archive"],
        soft404="themed",
        sitemap=True,
        sources=True,
        attachments=True,
    )


def holdout_hosts() -> list[HostSpec]:
    """traps_holdout's hosts: the same families dealt out again (see its docstring)."""
    bazaar = HostSpec("bazaar.test", pages=30, shop_categories=6, shop_products=8)
    bazaar.facet_variants = ["shuffled", "tracking", "view", "slugs"]
    bazaar.soft404, bazaar.session = "links", "counter"
    journal = HostSpec("journal.test", pages=150, sitemap=True, soft404="themed")
    journal.calendars, journal.long_urls = ["archive", "dated"], ["path"]
    kb = HostSpec("kb.test", "kb", pages=50, guide=[5, 6], sources=True, soft404="short")
    kb.path_growth, kb.session = ["counter", "segments"], "hex"
    blog = HostSpec("blog.test", "kb", pages=80, sitemap=True, soft404="redirect")
    blog.calendars, blog.long_urls = ["events"], ["query"]
    blog.attachments = True
    # Facet names no list holds (?tone=&fit=&maker=), in shuffled order.
    outlet = HostSpec("outlet.test", pages=20, shop_categories=4, shop_products=10)
    outlet.facet_variants = ["unnamed", "shuffled"]
    # Facets as path segments, no query at all (/shop/shoes/f/color-red/size-m/).
    boutique = HostSpec("boutique.test", pages=20, shop_categories=4, shop_products=10)
    boutique.facet_variants = ["paths"]
    return [bazaar, journal, kb, blog, outlet, boutique]
