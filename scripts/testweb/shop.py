"""A shop section: real category and product pages, and the faceted-navigation trap.

Faceted filters are the largest crawl-budget sink of real shops: every category page links
filter, sort, pagination and view variants of itself, each a 200 near duplicate showing the
same or a reordered subset of the products, and every variant links one more parameter or
one changed value, so the combinations multiply. The real pages (/shop/, categories,
products) are all linked without a query, so a crawler that closes the facet pattern loses
no real page. Variants (HostSpec.facet_variants): "shuffled" parameter order per link, a
"tracking" ref= parameter, an unknown "view" parameter, "slugs" for product names,
"unnamed" parameter names no crawler's list of facet names holds (?tone=&fit=&maker=),
"paths" a path segment per filter and no query (/shop/shoes/f/color-red/size-m/), "bare"
the same without the marker directory (/shop/shoes/color-red/size-m/: the filters'
first level reads as the category's subsections),
"catparam" categories as a parameter of the shop's own path (/shop/?category=shoes, its
filters /shop/?category=shoes&color=red): real listings and their filter pages share a
path, and the products are reached only through the category listings; "paged" listings
of PAGE_SIZE products (?page=2.. real pages, products no longer linking their neighbours),
so a crawler that reads paging as a filter, or as noise, loses products.
"""

from __future__ import annotations

import dataclasses
import re
from urllib.parse import parse_qsl, urlencode

from .prose import WORDS, render, seeded_rng
from .routes import HTML, FamilyHandler, Link, Route, UrlFor
from .spec import HostSpec

CATEGORIES = ("shoes", "shirts", "bags", "hats", "jackets", "socks", "watches", "scarves")
FACETS: dict[str, tuple[str, ...]] = {
    "color": ("red", "blue", "green", "black"),
    "size": ("s", "m", "l", "xl"),
    "brand": ("acme", "nova", "zenith"),
    "sort": ("price", "name", "new"),
}
FILTERS = ("color", "size", "brand")
VIEWS = ("grid", "list")
PARAM_ORDER = ("color", "size", "brand", "sort", "page", "view")
PAGE_SIZE = 4  # products per ?page=
# The "tracking" variant's stamp: where the link was (side0, side1, ..): the same page.
TRACKING_PARAM = "ref"
# The "unnamed" variant's spelling of each parameter in URLs (the state keeps the above).
UNNAMED = {"color": "tone", "size": "fit", "brand": "maker", "sort": "arrange", "page": "pg"}
UNNAMED |= {"view": "look"}
NAMED = {v: k for k, v in UNNAMED.items()}


class Shop:
    """The /shop/ section of one host."""

    def __init__(self, h: HostSpec, url: UrlFor, seed: int) -> None:
        self.h, self.url, self.seed = h, url, seed
        self.variants = frozenset(h.facet_variants)
        self.categories = CATEGORIES[: h.shop_categories]
        self.names = {cat: [self._name(cat, n) for n in self._numbers()] for cat in self.categories}
        self.number_of = {
            cat: {s: i + 1 for i, s in enumerate(ns)} for cat, ns in self.names.items()
        }

    def _numbers(self) -> range:
        return range(1, self.h.shop_products + 1)

    def _name(self, cat: str, n: int) -> str:
        if "slugs" not in self.variants:
            return f"item-{n}"
        rng = seeded_rng(self.seed, "product", self.h.name, cat, n)
        return f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{n}"

    def table(self) -> list[tuple[str, FamilyHandler]]:
        return [
            (r"/shop/", self._shop),
            (r"/shop/([a-z]+)/", self._category),
            (r"/shop/([a-z]+)/([a-z0-9-]+)", self._product),
            (r"/shop/([a-z]+)/f/((?:[a-z]+-[a-z0-9]+/)+)", self._marked_path_facets),
            (r"/shop/([a-z]+)/((?:[a-z]+-[a-z0-9]+/)+)", self._bare_path_facets),
        ]

    def entries(self) -> list[str]:
        return ["/shop/"]

    def real_paths(self) -> list[str]:
        out = ["/shop/"] + [self._home(cat) for cat in self.categories]
        return out + [f"/shop/{cat}/{name}" for cat in self.categories for name in self.names[cat]]

    # ---- real pages --------------------------------------------------------------
    def _home(self, cat: str) -> str:
        """A category listing's path."""
        return f"/shop/?category={cat}" if "catparam" in self.variants else f"/shop/{cat}/"

    def _shop(self, m: re.Match[str], query: str) -> Route | None:
        """/shop/, or with "catparam" a category listing and its filter pages."""
        pairs = parse_qsl(query, True)
        cat = dict(pairs).get("category") if "catparam" in self.variants else None
        if cat is None:
            return self._index()
        route = self._listed(cat, self._named([(k, v) for k, v in pairs if k != "category"]))
        if route is None:
            return None
        # The category's own prose, its filter pages' too, as a category path's would be
        # (prose is seeded on the path, and /shop/ is every category's here).
        body = render(self.seed, self.h.name, f"/shop/{cat}/", route)
        return dataclasses.replace(route, body=body, headers=HTML)

    def _index(self) -> Route:
        links = [Link(self.url(self._home(cat)), self._home(cat)) for cat in self.categories]
        links.append(Link(self.url("/"), "/"))
        return Route("page", title=f"{self.h.name} shop", links=tuple(links))

    def _product(self, m: re.Match[str], query: str) -> Route | None:
        cat, name = m.group(1), m.group(2)
        n = self.number_of.get(cat, {}).get(name)
        if n is None:
            return None
        names = self.names[cat]
        related = {names[n % len(names)], names[n - 2]}  # the next and previous products
        if "paged" in self.variants:
            related = set()  # reached only through the listing's pages
        home = self._home(cat)
        links = [Link(self.url(home), home), Link(self.url("/shop/"), "../")]
        links += [Link(self.url(f"/shop/{cat}/{r}"), r) for r in sorted(related - {name})]
        links.append(Link(self.url("/"), "/"))
        return Route("page", title=f"{self.h.name} {cat} {name}", links=tuple(links))

    def _category(self, m: re.Match[str], query: str) -> Route | None:
        if "catparam" in self.variants:
            return None
        return self._listed(m.group(1), self._named(parse_qsl(query, True)))

    def _named(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """A query's filter state: utm aliases and tracking stamps dropped (the same page),
        unnamed spellings read back."""
        pairs = [(k, v) for k, v in pairs if not k.startswith("utm_") and k != TRACKING_PARAM]
        if "unnamed" in self.variants:
            pairs = [(NAMED.get(k, f"_{k}"), v) for k, v in pairs]  # a real name is unknown
        return pairs

    def _marked_path_facets(self, m: re.Match[str], query: str) -> Route | None:
        return None if "bare" in self.variants else self._path_facets(m, query)

    def _bare_path_facets(self, m: re.Match[str], query: str) -> Route | None:
        return self._path_facets(m, query) if "bare" in self.variants else None

    def _path_facets(self, m: re.Match[str], query: str) -> Route | None:
        """The "paths" variant: /shop/<cat>/f/color-red/size-m/ (a segment per filter), or
        with "bare" /shop/<cat>/color-red/size-m/."""
        segments = [tuple(seg.split("-", 1)) for seg in m.group(2).split("/") if seg]
        # Unnamed filters are spelled in the path as in a query (tone-red): read back.
        pairs = self._named([(k, v) for k, v in segments])
        if "paths" not in self.variants or any(k not in PARAM_ORDER for k, _ in pairs):
            return None
        route = self._listed(m.group(1), [(k, v) for k, v in pairs] or [("page", "1")])
        if route is None:
            return None
        # The category's prose, as its query facets get it (their path is the category's):
        # a filter changes the listing, not the page's text.
        body = render(self.seed, self.h.name, f"/shop/{m.group(1)}/", route)
        return dataclasses.replace(route, body=body, headers=HTML)

    def _listed(self, cat: str, pairs: list[tuple[str, str]]) -> Route | None:
        if cat not in self.names:
            return None
        state = {k: v for k, v in pairs if k in PARAM_ORDER}
        shown = self._listing(cat, state)
        # A path facet sits deeper than its category, a "catparam" listing higher than
        # its products: their links are root-relative.
        deep = ("paths" in self.variants and bool(pairs)) or "catparam" in self.variants
        links = [Link(self.url("/shop/"), "/shop/" if deep else "../")]
        links += [
            Link(self.url(f"/shop/{cat}/{name}"), f"/shop/{cat}/{name}" if deep else name)
            for name in shown
        ]
        links += self._facet_links(cat, state, len(self._matching(cat, state)))
        links.append(Link(self.url("/"), "/"))
        title = f"{self.h.name} shop {cat}"
        # utm aliases are the category itself, and so is a query naming no filter (a view
        # of the listing: HostSpec.alternates, which the families make of it).
        if not state or self._next_page(pairs):
            return Route("page", title=title, links=tuple(links))
        described = ", ".join(f"{k}={v}" for k, v in pairs)
        return Route("facet", title=f"{title} ({described})", links=tuple(links))

    def _next_page(self, pairs: list[tuple[str, str]]) -> bool:
        """A "paged" listing's page 2 or later, no filter: a real page."""
        if "paged" not in self.variants or len(pairs) != 1 or pairs[0][0] != "page":
            return False
        return pairs[0][1].isdigit() and int(pairs[0][1]) >= 2

    # ---- facets --------------------------------------------------------------------
    def _marker(self) -> str:
        """The directory between a category and its path filters."""
        return "" if "bare" in self.variants else "f/"

    def _attribute(self, cat: str, n: int, facet: str) -> str:
        i = self.categories.index(cat)
        values = FACETS[facet]
        return values[{"color": n + i, "size": 3 * n + i, "brand": n}[facet] % len(values)]

    def _matching(self, cat: str, state: dict[str, str]) -> list[int]:
        wanted = [(f, state[f]) for f in FILTERS if f in state]
        return [
            n for n in self._numbers() if all(self._attribute(cat, n, f) == v for f, v in wanted)
        ]

    def _listing(self, cat: str, state: dict[str, str]) -> list[str]:
        """The category's products (names) a filter/sort/page state shows."""
        numbers = self._matching(cat, state)
        sort = state.get("sort")
        if sort == "price":
            numbers.sort(key=lambda n: (n * 37 + len(cat)) % 89)
        elif sort == "name":
            numbers.sort(key=lambda n: self.names[cat][n - 1])
        elif sort == "new":
            numbers.reverse()
        if "paged" in self.variants and "page" not in state:
            state = {**state, "page": "1"}  # the listing shows its first page alone
        if "page" in state:
            page = int(state["page"]) if state["page"].isdigit() else 1
            numbers = numbers[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        return [self.names[cat][n - 1] for n in numbers]

    def _facet_links(self, cat: str, state: dict[str, str], matching: int) -> list[Link]:
        """One more parameter or one changed value of the current state, per link."""
        targets = [{**state, f: v} for f, values in FACETS.items() for v in values]
        pages = max(1, -(-matching // PAGE_SIZE))
        targets += [{**state, "page": str(p)} for p in range(1, pages + 1)]
        if "view" in self.variants:
            targets += [{**state, "view": v} for v in VIEWS]
        targets = [t for t in targets if t != state]
        return [self._facet_link(cat, state, t, i) for i, t in enumerate(targets)]

    def _facet_link(self, cat: str, source: dict[str, str], target: dict[str, str], i: int) -> Link:
        keys = sorted(target, key=PARAM_ORDER.index)
        if "shuffled" in self.variants:
            seeded_rng(self.seed, "order", self.h.name, cat, sorted(source.items()), i).shuffle(
                keys
            )
        pairs = [(UNNAMED[k] if "unnamed" in self.variants else k, target[k]) for k in keys]
        # One filter state under as many URLs as sources; a "paged" listing's own pages are
        # linked clean (they are real pages).
        if "tracking" in self.variants and not self._next_page(list(target.items())):
            pairs.append((TRACKING_PARAM, f"side{len(source)}"))
        if "paths" in self.variants:  # no query: a path segment per filter
            run = "".join(f"{k}-{v}/" for k, v in pairs if k != TRACKING_PARAM)
            path = f"/shop/{cat}/{self._marker()}{run}"
            return Link(self.url(path), path)
        if "catparam" in self.variants:
            query = urlencode([("category", cat), *pairs])
            return Link(self.url(f"/shop/?{query}"), f"?{query}")
        query = urlencode(pairs)
        return Link(self.url(f"/shop/{cat}/?{query}"), f"?{query}")
