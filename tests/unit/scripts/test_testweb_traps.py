"""The test web's trap families (issue #12): each family answers its variants with the
URLs and statuses a crawl-budget test relies on. Pure: no sockets."""

from __future__ import annotations

import dataclasses
import itertools
import re
from urllib.parse import parse_qsl, urlsplit

import pytest

from extensions.admission.canonical import DEFAULT_SESSION_PARAMS, DEFAULT_TRACKING_PARAMS
from scripts.testweb import HostSpec, WebSpec
from scripts.testweb.endless import LONG_URL_END
from scripts.testweb.expected import dead_links
from scripts.testweb.files import ATTACHMENTS
from scripts.testweb.generator import ENTRIES
from scripts.testweb.shop import PARAM_ORDER
from scripts.testweb.sites import Site
from scripts.testweb.spec import SESSION_PARAMS

PORT = 18080


@pytest.fixture(scope="module")
def site() -> Site:
    return Site(WebSpec.traps(), PORT)


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _links(site: Site, host: str, path: str) -> list[str]:
    return [link.target for link in site.route(host, path).links]


def _paragraphs(body: bytes) -> list[str]:
    return [p.split("</p>")[0] for p in body.decode().split("<p>")[1:]]


def _chain(site: Site, host: str, path: str, hops: int, marker: str) -> list[str]:
    """Follow the last same-host link containing `marker` (the "next" one), `hops` times
    or until there is none."""
    urls = [site.url(host, path)]
    for _ in range(hops):
        nxt = [u for u in _links(site, host, _path(urls[-1])) if marker in u and host in u]
        if not nxt:
            break
        urls.append(nxt[-1])
    return urls


# ---- facets ---------------------------------------------------------------------------


def test_category_pages_link_products_and_every_facet(site: Site) -> None:
    links = _links(site, "store.test", "/shop/shoes/")
    assert site.route("store.test", "/shop/shoes/").kind == "page"
    products = [u for u in links if "/shop/shoes/item-" in u]
    assert len(products) == 12 and not any("?" in u for u in products)
    params = {k for u in links for k, _ in parse_qsl(urlsplit(u).query)}
    assert {"color", "size", "brand", "sort", "page", "view", "ref"} <= params
    assert all(site.respond("store.test", _path(u)).status == 200 for u in products)


def test_facet_pages_are_near_duplicates_of_their_category(site: Site) -> None:
    category = site.respond("store.test", "/shop/shoes/").body
    facet_path = "/shop/shoes/?color=red&sort=new&ref=side0"
    facet = site.respond("store.test", facet_path)
    assert facet.status == 200 and facet.body != category
    assert site.route("store.test", facet_path).kind == "facet"
    assert _paragraphs(facet.body) == _paragraphs(category)  # same text, other listing
    shown = [u for u in _links(site, "store.test", facet_path) if "/item-" in u]
    assert shown == [site.url("store.test", f"/shop/shoes/item-{n}") for n in (12, 8, 4)]
    # From a facet page every link adds one parameter or changes one value.
    deeper = [u for u in _links(site, "store.test", facet_path) if "?" in u]
    assert any("size=" in u and "color=red" in u for u in deeper)
    assert any("color=blue" in u for u in deeper)


def test_categories_as_a_parameter_of_the_shops_path() -> None:
    """The "catparam" variant: /shop/?category=shoes is a real listing with prose of its
    own, its filters add to its query and name it as canonical; products link it back."""
    shop = HostSpec("cp.test", shop_categories=3, facet_variants=["catparam"], canonical_links=True)
    cp = Site(WebSpec(hosts=[shop]), PORT)
    listing, filtered = "/shop/?category=shoes", "/shop/?category=shoes&color=red"
    assert cp.route("cp.test", listing).kind == "page"
    assert cp.route("cp.test", filtered).kind == "facet"
    assert cp.route("cp.test", "/shop/shoes/").kind == "missing"
    assert _paragraphs(cp.respond("cp.test", listing).body) != _paragraphs(
        cp.respond("cp.test", "/shop/").body
    )
    assert f'href="{cp.url("cp.test", listing)}"'.encode() in cp.respond("cp.test", filtered).body
    assert cp.url("cp.test", listing) in _links(cp, "cp.test", "/shop/shoes/item-3")
    assert cp.url("cp.test", listing) in cp.real_pages()


def test_trap_prose_gives_each_trap_page_words_of_its_own() -> None:
    """WebSpec.trap_prose: trap pages list their own content (no template copies),
    real pages and soft 404s keep their bytes."""
    plain, wordy = (Site(dataclasses.replace(WebSpec.traps(), trap_prose=n), PORT) for n in (0, 40))
    facets = ["/shop/shoes/?color=red", "/shop/shoes/?color=blue"]
    own = []
    for path in facets:
        before, after = plain.respond("store.test", path), wordy.respond("store.test", path)
        added = [p for p in _paragraphs(after.body) if p not in _paragraphs(before.body)]
        assert after.status == 200 and len(added) == 1 and len(added[0].split()) == 40
        own.append(added[0])
    assert own[0] != own[1]
    for host, path in [("store.test", "/shop/shoes/"), ("store.test", "/no-such-page")]:
        assert plain.respond(host, path).body == wordy.respond(host, path).body
    # A tracking stamp (store.test's facet links carry ?ref=sideN) is the same page.
    stamped = wordy.respond("store.test", "/shop/shoes/?color=red&ref=side1&utm_source=x")
    assert stamped.body == wordy.respond("store.test", "/shop/shoes/?color=red").body


def test_canonical_links_name_each_pages_canonical_url() -> None:
    hosts = [dataclasses.replace(h, canonical_links=True) for h in WebSpec.traps().hosts]
    site = Site(dataclasses.replace(WebSpec.traps(), hosts=hosts), PORT)

    def declared(host: str, path: str) -> list[str]:
        return re.findall(
            r'<link rel="canonical" href="([^"]*)">', site.respond(host, path).body.decode()
        )

    assert declared("store.test", "/shop/shoes/") == [site.url("store.test", "/shop/shoes/")]
    facet = "/shop/shoes/?color=red&sort=new&ref=side0"
    assert declared("store.test", facet) == [site.url("store.test", "/shop/shoes/")]
    assert declared("news.test", "/page/2?s=9f2c41d07a11") == [site.url("news.test", "/page/2")]
    assert declared("store.test", "/no-such-page") == []
    # Off by default: the same bytes as before the flag.
    assert b"canonical" not in Site(WebSpec.traps(), PORT).respond("store.test", facet).body


def test_facet_variants(site: Site) -> None:
    def facet_queries(host: str, path: str) -> list[list[str]]:
        return [
            [k for k, _ in parse_qsl(urlsplit(u).query)]
            for u in _links(site, host, path)
            if "?" in u
        ]

    plain = facet_queries("market.test", "/shop/bags/?color=red&size=m")
    assert all(keys == sorted(keys, key=PARAM_ORDER.index) for keys in plain)
    assert not any({"ref", "view"} & set(keys) for keys in plain)
    shuffled = facet_queries("mall.test", "/shop/bags/?color=red&size=m")
    assert any(keys != sorted(keys, key=PARAM_ORDER.index) for keys in shuffled)
    tracked = facet_queries("store.test", "/shop/bags/?color=red")
    assert all(keys[-1] == "ref" for keys in tracked)
    assert any("view" in keys for keys in tracked)
    slugs = [u for u in _links(site, "mall.test", "/shop/bags/") if "/shop/bags/" in u]
    assert any(u.rsplit("/", 1)[1].count("-") == 2 for u in slugs)  # word-word-n names
    assert not any("/item-" in u for u in slugs)


def test_unknown_shop_paths_are_not_real(site: Site) -> None:
    assert site.respond("market.test", "/shop/item-1").status == 404  # no soft 404 there
    assert site.respond("market.test", "/shop/lamps/").status == 404  # not a category
    assert site.respond("market.test", "/shop/bags/item-99").status == 404
    utm = site.route("market.test", "/shop/bags/?utm_source=x")
    assert utm.kind == "page"  # a utm alias is the category itself


# ---- soft 404s ---------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["news.test", "mall.test"])
def test_soft404_pages_carry_fresh_links(site: Site, host: str) -> None:
    first, second = site.respond(host, "/no/such/page"), site.respond(host, "/other-missing")
    assert first.status == second.status == 200
    assert b"not found" in first.body.lower()
    fresh = set(_links(site, host, "/no/such/page")) - set(_links(site, host, "/other-missing"))
    assert len(fresh) >= 3
    assert all(site.is_trap(u) for u in fresh)  # they lead to more soft 404s


def test_soft404_styles(site: Site) -> None:
    short = site.respond("store.test", "/gone")
    assert short.status == 200 and len(short.body) < 400
    themed = site.respond("mall.test", "/gone")
    assert len(themed.body) > 3 * len(short.body)
    moved = site.respond("forum.test", "/gone")
    assert (moved.status, moved.headers["Location"]) == (302, site.url("forum.test", "/"))
    assert site.is_trap(site.url("forum.test", "/gone"))
    assert site.respond("docs.test", "/gone").status == 404  # no soft404: a real 404


def test_chatty_not_found_pages_share_the_themed_template_and_add_their_own() -> None:
    chat = Site(WebSpec(hosts=[HostSpec("chat.test", pages=20, soft404="chatty")]), PORT)
    themed = Site(WebSpec(hosts=[HostSpec("chat.test", pages=20, soft404="themed")]), PORT)
    a, b = (_paragraphs(chat.respond("chat.test", p).body) for p in ("/gone", "/lost"))
    base = _paragraphs(themed.respond("chat.test", "/gone").body)
    assert a[: len(base)] == base and a[1:] != b[1:] and a[2:5] == b[2:5]
    assert len(a) == len(base) + 2 and all(p.startswith("You might like:") for p in a[-2:])


def test_real_pages_link_a_few_broken_paths(site: Site) -> None:
    for host in ("mall.test", "store.test"):  # soft-404 hosts without session tokens
        pages = [f"/page/{n}" for n in range(1, 21)]
        broken = {u for p in pages for u in _links(site, host, p) if site.is_trap(u)}
        assert 2 <= len(broken) <= 6, (host, broken)
        assert all(site.respond(host, _path(u)).status == 200 for u in broken)


def test_dead_links_are_the_broken_links_real_pages_carry_token_free(site: Site) -> None:
    dead = dead_links(site, site.real_pages())
    pages = [f"/page/{n}" for n in range(1, 21)]
    mall = {u for p in pages for u in _links(site, "mall.test", p) if site.is_trap(u)}
    assert mall <= dead and all(site.kind(u) == "soft404" for u in dead)
    # news.test stamps ?s=<token> on its links: the crawler cuts it, and so does the oracle.
    news = [u for u in dead if "//news.test:" in u]
    assert news and not [u for u in news if "?" in u], news
    made_up = _links(site, "mall.test", _path(sorted(mall)[0]))  # a not-found page's own
    assert not {u for u in made_up if site.kind(u) == "soft404"} & dead


# ---- session ids ---------------------------------------------------------------------


@pytest.mark.parametrize(("host", "param"), [("news.test", "s"), ("forum.test", "visit")])
def test_session_tokens_make_endless_exact_duplicates(site: Site, host: str, param: str) -> None:
    (spec,) = [h for h in site.spec.hosts if h.name == host]
    assert param == SESSION_PARAMS[spec.session]
    known = DEFAULT_SESSION_PARAMS + DEFAULT_TRACKING_PARAMS
    assert param not in known  # the canonicalizer cannot drop it: only content tells
    urls = _chain(site, host, "/page/1", 5, "/page/")
    tokens = [dict(parse_qsl(urlsplit(u).query)).get(param) for u in urls[1:]]
    assert len(set(tokens)) == 5 and None not in tokens  # a new token every render
    same_host = [u for u in _links(site, host, "/page/1") if f"//{host}:" in u]
    assert all(f"{param}=" in u for u in same_host)
    page, dup = site.respond(host, "/page/2"), site.respond(host, f"/page/2?{param}=77")
    assert _paragraphs(page.body) == _paragraphs(dup.body)
    assert site.is_trap(site.url(host, f"/page/2?{param}=77"))
    assert not site.is_trap(site.url(host, "/page/2"))


def test_counter_tokens_count_up(site: Site) -> None:
    links = _links(site, "forum.test", "/page/3?visit=41")
    assert any(u.endswith("/page/4?visit=42") for u in links)


# ---- calendars -------------------------------------------------------------------------


def test_event_calendar_runs_both_ways(site: Site) -> None:
    forward = _chain(site, "market.test", "/events?year=2024&month=1", 30, "month=")
    assert len(forward) == 31 and forward[12].endswith("/events?year=2025&month=1")
    back = [u for u in _links(site, "market.test", "/events?year=2024&month=1") if "2023" in u]
    assert back == [site.url("market.test", "/events?year=2023&month=12")]
    assert all(site.is_trap(u) for u in forward + back)
    bodies = {_paragraphs(site.respond("market.test", _path(u)).body)[0][:12] for u in forward}
    assert bodies <= {"Nothing is s", "One entry on"}  # one template
    assert site.respond("market.test", "/events?year=2024&month=13").status == 404


def test_a_month_calendar_by_name_runs_both_ways() -> None:
    site = Site(WebSpec(hosts=[HostSpec("cal.test", pages=5, calendars=["months"])]), PORT)
    back = _chain(site, "cal.test", "/calendar/2024/jan/", 13, "/calendar/")
    assert [urlsplit(u).path for u in back[:3]] == [
        "/calendar/2024/jan/", "/calendar/2024/feb/", "/calendar/2024/mar/",
    ]  # fmt: skip
    assert urlsplit(back[-1]).path == "/calendar/2025/feb/"
    assert site.route("cal.test", "/calendar/2024/jan/").kind == "calendar"
    assert site.route("cal.test", "/calendar/2024/xyz/").kind == "missing"


def test_day_archive_runs_both_ways(site: Site) -> None:
    links = _links(site, "news.test", "/archive/2024/12/31/")
    assert site.url("news.test", "/archive/2025/01/01/") in links
    assert site.url("news.test", "/archive/2024/12/30/") in links
    days = _chain(site, "mall.test", "/archive/2024/01/05/", 40, "/archive/")
    assert len(set(days)) == 41 and all(site.is_trap(u) for u in days)
    assert site.respond("news.test", "/archive/2024/02/30/").status == 200  # a soft 404
    assert site.route("news.test", "/archive/2024/02/30/").kind == "soft404"


# ---- path growth and long URLs -----------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "entry", "marker"),
    [("docs.test", "/docs/v1/", "/docs/v1/"), ("wiki.test", "/gallery/p1", "/gallery/")],
)
def test_paths_grow_forever(site: Site, host: str, entry: str, marker: str) -> None:
    urls = _chain(site, host, entry, 25, marker)
    assert len(urls) == 26
    assert all(len(a) < len(b) for a, b in itertools.pairwise(urls))
    assert all(site.respond(host, _path(u)).status == 200 and site.is_trap(u) for u in urls)
    assert urls[3].endswith(("/docs/v1/more/more2/more3/", "/gallery/p1/p2/p3/p4"))


def test_docs_host_keeps_the_old_traps(site: Site) -> None:
    for path in ("/trap/a/a/a", "/calendar/2030/05"):
        assert site.respond("docs.test", path).status == 200
        assert site.is_trap(site.url("docs.test", path))


@pytest.mark.parametrize(
    ("host", "entry", "marker"),
    [
        ("market.test", "/search?q=crawler", "/search?"),
        ("forum.test", "/filter/crawler", "/filter/"),
    ],
)
def test_long_urls_end_above_1000_characters(
    site: Site, host: str, entry: str, marker: str
) -> None:
    urls = _chain(site, host, entry, 200, marker)
    lengths = [len(_path(u)) for u in urls]
    assert lengths == sorted(lengths) and 10 < len(urls) < 60
    assert lengths[-1] > LONG_URL_END >= lengths[-2]
    assert all(site.is_trap(u) for u in urls)


# ---- non-page files ----------------------------------------------------------------------


def test_sources_and_attachments(site: Site) -> None:
    source = site.respond("docs.test", "/_sources/page-3.txt")
    assert source.status == 200 and source.headers["Content-Type"].startswith("text/plain")
    assert site.url("docs.test", "/_sources/page-3.txt") in _links(site, "docs.test", "/page/3")
    assert site.respond("docs.test", "/_sources/page-999.txt").status == 404
    types = {p: site.respond("docs.test", p).headers["Content-Type"] for p in ATTACHMENTS}
    assert types == {
        "/static/logo.png": "image/png",
        "/files/manual.pdf": "application/pdf",
        "/files/examples.zip": "application/zip",
    }
    assert site.respond("docs.test", "/static/logo.png").body.startswith(b"\x89PNG")
    assert site.respond("docs.test", "/files/examples.zip").body.startswith(b"PK")
    for url in [u for u in site.real_pages() if "//docs.test:" in u]:
        assert {site.url("docs.test", p) for p in ATTACHMENTS} <= set(
            _links(site, "docs.test", _path(url))
        )
    assert all(site.is_non_page(site.url("docs.test", p)) for p in ATTACHMENTS)
    assert not site.is_trap(site.url("docs.test", "/files/manual.pdf"))


def test_new_flags_are_off_by_default() -> None:
    site = Site(WebSpec(hosts=[HostSpec("plain.test", pages=3)]), PORT)
    new_paths = "/shop/ /events /archive/2024/01/05/ /docs/v1/ /gallery/p1 /search?q=x"
    extra = ["/filter/x", "/guide/", "/_sources/page-1.txt", "/gone", *ENTRIES.values()]
    for path in [*new_paths.split(), *extra]:
        assert site.respond("plain.test", path).status == 404, path
    links = _links(site, "plain.test", "/page/1")
    assert not any("?" in u or "/static/" in u for u in links)


@pytest.mark.parametrize(
    "bad",
    [
        {"soft404": "loud"},
        {"session": "cookie"},
        {"calendars": ["weekly"]},
        {"facet_variants": ["colour"]},
        {"shop_categories": 99},
        {"guide": [2, 0]},
    ],
)
def test_misspelt_variants_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"x\.test|use any of"):
        HostSpec.from_dict({"name": "x.test", **bad})
