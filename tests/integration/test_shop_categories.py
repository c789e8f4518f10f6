"""Shops whose real listings share a path with their filter pages (scripts/testweb/shop.py):
categories as a parameter of the shop's path ("catparam": /shop/?category=shoes, its
filters /shop/?category=shoes&color=red), and listings paged by a parameter ("paged":
/shop/shoes/?page=2, products reached only through their listing's pages). Every cap on
a path's query variants (the facet cap, facet sidebars, trap feedback on the path's
variants together, learned noise parameters) must leave the categories and the pages
alone while it caps the filters, with filter names listed or not, tracking stamps and
shuffled parameters, and filter pages that list words of their own.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from scripts.testweb import HostSpec, WebSpec
from tests.integration.test_crawl_budget import crawl_to_its_end

# Filter pages a shop of 6 categories costs: 2 filter pages (the facet cap: the whole shop
# is one path) and the categories' ?page= listings, which the oracle counts as filter
# pages (up to 3 each): 4-20 a shop measured; without facet sidebars the shop with
# unnamed filters took 66.
MAX_FILTER_PAGES_PER_SHOP = 30

VARIANTS = (["catparam"], ["catparam", "unnamed"], ["catparam", "unnamed", "tracking"])
VARIANTS += (["catparam", "shuffled"],)


def shop_web() -> WebSpec:
    hosts = [
        HostSpec(f"shop{i}.test", pages=12, shop_categories=6, shop_products=12, facet_variants=v)
        for i, v in enumerate(VARIANTS)
    ]
    return dataclasses.replace(WebSpec(hosts=hosts, seed=17, base_ip="127.0.56.1"), trap_prose=80)


def test_categories_as_a_parameter_are_crawled_and_their_filters_capped(tmp_path: Path) -> None:
    web, _, requests = crawl_to_its_end(shop_web(), tmp_path)  # reaches every product
    real = set(web.real_pages())
    categories = {u for u in real if "?category=" in u}
    assert len(categories) == 6 * len(VARIANTS)
    fetched = {r["url"] for r in requests if r["status"] == 200}
    assert categories <= fetched, sorted(categories - fetched)
    for i in range(len(VARIANTS)):
        host = f"shop{i}.test"
        filters = [r["url"] for r in requests if r["host"] == host]
        filters = [u for u in filters if web.site.kind(u) == "facet"]
        assert len(filters) <= MAX_FILTER_PAGES_PER_SHOP, (VARIANTS[i], filters)


PAGED = (["paged"], ["paged", "tracking"], ["paged", "unnamed", "tracking"])
PAGED += (["paged", "catparam", "unnamed"], ["paged", "shuffled"])


def test_paged_listings_are_crawled_to_their_last_product(tmp_path: Path) -> None:
    """Before, a near duplicate (page 1 of a listing beside the listing itself, 0.9 alike)
    taught "page" as the host's noise parameter, and every later page collapsed onto
    the listing: products past the first page were never reached."""
    hosts = [
        HostSpec(f"paged{i}.test", pages=12, shop_categories=6, shop_products=12, facet_variants=v)
        for i, v in enumerate(PAGED)
    ]
    spec = WebSpec(hosts=hosts, seed=19, base_ip="127.0.57.1")
    _, result, _ = crawl_to_its_end(dataclasses.replace(spec, trap_prose=80), tmp_path)
    assert "Learned noise parameter 'page'" not in result.log
    assert "Learned noise parameter 'pg'" not in result.log


# Shops with filters in the path under names of their own, in order or shuffled, behind a
# marker directory (/shop/shoes/f/tone-red/) or right after the category ("bare":
# /shop/shoes/tone-red/), every filter page with words of its own: no content verdict
# judges them and no list knows their names.
PATHS = (["paths", "unnamed"], ["paths", "unnamed", "shuffled"], ["paths", "unnamed", "bare"])
PATHS += (["paths", "unnamed", "bare", "slugs", "shuffled"],)
# A category's first filter pages are fetched (its page shows no filter yet), then their
# sidebars cap the rest, dispatch drops the first level still queued, and the listing's
# own pages (pg-2/) cap theirs once the base is proven: 30-32 a shop of four categories
# measured (48-79 without the last, 64-88 without the drop). Before, a shop of dealt:16
# took 1,300+ and the crawl never ended.
MAX_PATH_FILTER_PAGES_PER_SHOP = 50


def test_filters_in_the_path_under_names_of_their_own_are_capped(tmp_path: Path) -> None:
    """A filter page (/f/tone-red/) links its refinements (one more name-value segment,
    in any order) and moves its own value to others (/f/tone-blue/, /f/tone-green/):
    that shows its run to be filters (admission/facet_sidebar.py), and they are capped
    by its base as query filters are by their path."""
    hosts = [
        HostSpec(f"paths{i}.test", pages=12, shop_categories=4, shop_products=8, facet_variants=v)
        for i, v in enumerate(PATHS)
    ]
    spec = WebSpec(hosts=hosts, seed=23, base_ip="127.0.59.1")
    web, result, requests = crawl_to_its_end(dataclasses.replace(spec, trap_prose=80), tmp_path)
    # The first level queued from the categories, dropped once a filter page showed it.
    assert "'frontier/dropped/facet_cap'" in result.log
    filters: dict[str, list[str]] = {"+".join(v): [] for v in PATHS}
    for r in requests:
        if web.site.kind(r["url"]) == "facet":
            filters["+".join(PATHS[int(r["host"].removeprefix("paths")[0])])].append(r["url"])
    counts = {shop: len(urls) for shop, urls in filters.items()}
    assert max(counts.values()) <= MAX_PATH_FILTER_PAGES_PER_SHOP, (counts, filters)
