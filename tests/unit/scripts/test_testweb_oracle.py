"""The trap webs' oracle: Site.real_pages, is_trap and is_non_page against the bytes the
site serves (Scrapy's link extractor, the sitemaps found through robots.txt), and the
ready-made WebSpec.traps() / large_site() webs. Pure: no sockets."""

from __future__ import annotations

import gzip
import re
from collections import Counter, deque
from functools import partial
from urllib.parse import urljoin, urlsplit

import pytest
from protego import Protego
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.response import get_base_url

from scripts.testweb import WebSpec, assign_ips
from scripts.testweb.__main__ import parse_spec
from scripts.testweb.expected import normalize
from scripts.testweb.routes import TRAP_KINDS
from scripts.testweb.sites import Site
from scripts.testweb.spec import SESSION_PARAMS, HostSpec

PORT = 18080
PER_SECTION = 60  # exploration budget per (host, route kind; real pages: first segment)
FAMILY_PATHS = re.compile(r"/(events|archive/|docs/v1/|gallery/|search|filter/|calendar/|trap/)")


@pytest.fixture(scope="module")
def site() -> Site:
    return Site(WebSpec.traps(), PORT)


@pytest.fixture(scope="module")
def real(site: Site) -> list[str]:
    return site.real_pages()


def _split(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.hostname or "", parts.path + (f"?{parts.query}" if parts.query else "")


def _explore(site: Site) -> dict[str, int]:
    """Every URL the web links (trap links followed too), a budget per site section:
    url -> status."""
    queue, seen, budget = deque(site.seeds()), {}, Counter[tuple[str, str]]()
    while queue:
        url = queue.popleft().partition("#")[0]
        host, path = _split(url)
        if url in seen or host not in site.hosts:
            continue
        route = site.route(host, path)
        section = (host, path.split("/")[1] if route.kind == "page" else route.kind)
        if budget[section] >= PER_SECTION:
            continue
        budget[section] += 1
        response = site.respond(host, path)
        seen[url] = response.status
        queue.extend(link.target for link in route.links)
        if "Location" in response.headers:
            queue.append(response.headers["Location"])
    return seen


@pytest.fixture(scope="module")
def explored(site: Site) -> dict[str, int]:
    return _explore(site)


# ---- the ready-made webs -----------------------------------------------------------


def test_traps_web_layout(site: Site, real: list[str]) -> None:
    spec = WebSpec.traps()
    hosts = assign_ips(spec)
    per_ip = Counter(hosts.values())
    assert 6 <= len(hosts) <= 10 and len(per_ip) < len(hosts) and 2 in per_ip.values()
    assert all(h.robots == "User-agent: *\nAllow: /\n" for h in spec.hosts)
    assert 2 <= sum(h.sitemap for h in spec.hosts) < len(spec.hosts)
    assert 600 <= len(real) <= 1000
    assert WebSpec.from_json(spec.to_json()) == spec  # what the server process loads
    assert parse_spec("traps") == spec and parse_spec("large_site") == WebSpec.large_site()


def test_every_family_twice_with_different_variants() -> None:
    hosts = WebSpec.traps().hosts
    families = {
        "facets": [tuple(h.facet_variants) for h in hosts if h.shop_categories],
        "soft404": [h.soft404 for h in hosts if h.soft404],
        "session": [h.session for h in hosts if h.session],
        "calendar": [(*h.calendars, h.trap) for h in hosts if h.calendars or h.trap],
        "growth": [(*h.path_growth, h.trap) for h in hosts if h.path_growth or h.trap],
        "long": [tuple(h.long_urls) for h in hosts if h.long_urls],
    }
    for family, variants in families.items():
        assert len(set(variants)) >= 2, family
    assert any(h.sources for h in hosts) and any(h.attachments for h in hosts)


def test_the_holdout_web_deals_every_family_out_to_other_hosts() -> None:
    holdout, traps = WebSpec.traps_holdout(), WebSpec.traps()
    assert not {h.name for h in holdout.hosts} & {h.name for h in traps.hosts}
    assert holdout.seed != traps.seed and parse_spec("traps_holdout") == holdout
    styles = {
        "facets": {v for h in holdout.hosts for v in h.facet_variants},
        "soft404": {h.soft404 for h in holdout.hosts if h.soft404},
        "session": {h.session for h in holdout.hosts if h.session},
        "calendar": {c for h in holdout.hosts for c in h.calendars},
        "growth": {g for h in holdout.hosts for g in h.path_growth},
        "long": {u for h in holdout.hosts for u in h.long_urls},
    }
    assert all(len(found) >= 2 for found in styles.values()), styles
    real = Site(holdout, PORT).real_pages()
    assert 300 <= len(real) <= 600
    assert all(not Site(holdout, PORT).is_trap(u) for u in real[:50])


def test_large_site_mixes_deep_real_pages_and_traps() -> None:
    (host,) = WebSpec.large_site().hosts
    site = Site(WebSpec.large_site(), PORT)
    real = site.real_pages()
    assert len(real) >= 200 and host.sitemap
    assert max(urlsplit(u).path.rstrip("/").count("/") for u in real) >= 4
    sitemap = site.respond(host.name, "/sitemap.xml").body.decode()
    assert sum(u in sitemap for u in real) >= len(real) - 1  # all but the root
    for path in ("/shop/bags/?color=red", "/archive/2024/03/01/", "/no-such-page"):
        assert site.is_trap(site.url(host.name, path)), path


# ---- the oracle ------------------------------------------------------------------------


def test_real_pages_are_real_html_pages(site: Site, real: list[str]) -> None:
    assert len(set(real)) == len(real)
    for url in real:
        host, path = _split(url)
        response = site.respond(host, path)
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/html")
        assert not site.is_trap(url) and not site.is_non_page(url), url
        assert not any(f"{p}=" in url for p in SESSION_PARAMS.values()), url
    sessions = [h.name for h in site.spec.hosts if h.session]
    for name in sessions:  # session hosts' pages are listed token-free, all of them
        pages = {site.url(name, f"/page/{n}") for n in range(1, 21)}
        assert pages <= set(real)


def _classify(site: Site, url: str, status: int, real: set[str]) -> str:
    host, path = _split(url)
    kind = site.route(host, path).kind
    if site.is_trap(url):
        assert kind in TRAP_KINDS and normalize(url) not in real
        return kind
    if site.is_non_page(url):
        return "non-page"
    if status == 200 and kind == "page":
        assert normalize(url) in real, url  # every real page reached is listed
        return "real"
    return kind


def test_every_linked_url_is_real_trap_or_file(
    site: Site, real: list[str], explored: dict[str, int]
) -> None:
    listed = set(real)
    kinds = Counter(_classify(site, url, status, listed) for url, status in explored.items())
    assert set(kinds) <= {*TRAP_KINDS, "real", "non-page", "redirect", "missing"}
    # Every family is reachable from the seeds; the wildcard-DNS trap lives in webs of
    # their own (dealt webs, the test below) and the generator and redirect traps and the
    # alternate views are asked for by name (test_testweb_traps.py, ..._alternates.py), as
    # traps() keeps its measured series.
    assert set(kinds) >= TRAP_KINDS - {"subdomain", "generator", "redirect_trap", "alternate"}
    assert kinds["real"] == len(listed & set(explored))
    for url in explored:
        path = _split(url)[1]
        if FAMILY_PATHS.match(path) or (re.match(r"/shop/[a-z]+/\?", path) and "utm_" not in path):
            assert site.is_trap(url), url


def test_hrefs_resolve_to_their_targets(site: Site, explored: dict[str, int]) -> None:
    for url, status in explored.items():
        host, path = _split(url)
        route = site.route(host, path)
        if status != 200 or not route.links:
            continue
        response = HtmlResponse(url, body=site.respond(host, path).body, encoding="utf-8")
        base = get_base_url(response)
        for link in route.links:
            assert urljoin(base, link.href) == link.target, (url, link)


def _sitemap_urls(site: Site, host: str, robots: str) -> list[str]:
    urls: list[str] = []
    for line in robots.splitlines():
        if line.startswith("Sitemap: "):
            index = site.respond(host, _split(line[9:])[1]).body
            for loc in re.findall(r"<loc>([^<]+)</loc>", gzip.decompress(index).decode()):
                body = site.respond(host, _split(loc)[1]).body.decode()
                urls += re.findall(r"<loc>([^<]+)</loc>", body)
    return urls


def _reference_crawl(site: Site) -> list[str]:
    """A polite crawl over the served bytes (robots, sitemaps, <a href>), session
    parameters stripped, that fetches what is_trap allows and keeps the HTML pages."""
    extractor = LinkExtractor(deny_extensions=[])
    drop = frozenset(SESSION_PARAMS.values())
    queue, seen, fetched = deque(site.seeds()), set(), []
    robots = {}
    for name in site.hosts:
        text = site.respond(name, "/robots.txt").body.decode()
        robots[name] = Protego.parse(text)
        queue.extend(_sitemap_urls(site, name, text))
    for url in map(partial(normalize, drop=drop), iter(queue.popleft, None)):
        host, path = _split(url)
        if url not in seen and robots[host].can_fetch(url, "*") and not site.is_trap(url):
            seen.add(url)
            response = site.respond(host, path)
            if 300 <= response.status < 400:
                queue.append(response.headers["Location"])
            elif response.headers["Content-Type"].startswith("text/html"):
                fetched.append(url)
                page = HtmlResponse(url, body=response.body, encoding="utf-8")
                queue.extend(link.url for link in extractor.extract_links(page))
        if not queue:
            break
    return fetched


def test_reference_crawl_finds_exactly_the_real_pages(site: Site, real: list[str]) -> None:
    assert sorted(_reference_crawl(site)) == sorted(real)


def test_same_spec_same_bytes(site: Site, explored: dict[str, int]) -> None:
    again = Site(WebSpec.from_json(WebSpec.traps().to_json()), PORT)
    sample = sorted(explored)[::3]
    assert len(sample) > 300
    for url in sample:
        host, path = _split(url)
        first, second = site.respond(host, path), again.respond(host, path)
        assert (first.status, first.headers, first.body) == (
            second.status,
            second.headers,
            second.body,
        ), url
    assert again.real_pages() == site.real_pages()


def test_a_wildcard_hosts_made_up_subdomains_are_served_and_are_traps() -> None:
    spec = WebSpec(hosts=[HostSpec("farm.test", pages=5, subdomain_trap=True)])
    site = Site(spec, PORT)
    made_up = [
        link.target for link in site.route("farm.test", "/").links if ".farm.test" in link.target
    ]
    assert len(made_up) == 2
    host = _split(made_up[0])[0]
    page = site.route(host, "/")
    assert page.kind == "subdomain" and site.is_trap(made_up[0])
    deeper = [link.target for link in page.links if link.target.endswith(f".farm.test:{PORT}/")]
    assert len(deeper) == 3 and all(site.is_trap(u) for u in deeper)
    assert site.route(host, "/robots.txt").kind == "robots"
    assert site.kind(f"http://other.test:{PORT}/") == "foreign"
