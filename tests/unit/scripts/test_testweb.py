"""Unit tests for the test-web generator: pure, no sockets (see integration tests for those)."""

from __future__ import annotations

import ipaddress
import re
from collections import deque
from urllib.parse import urljoin

import pytest
from protego import Protego
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.response import get_base_url

from scripts.testweb import HostSpec, WebSpec, assign_ips
from scripts.testweb.__main__ import parse_spec
from scripts.testweb.expected import normalize
from scripts.testweb.sites import Site

PORT = 18080


@pytest.fixture(scope="module")
def demo() -> Site:
    return Site(WebSpec.demo(), PORT)


def _path(url: str) -> str:
    return re.sub(r"^http://[^/]+", "", url)


# ---- IP assignment --------------------------------------------------------------


def test_demo_ip_layout() -> None:
    hosts = assign_ips(WebSpec.demo())
    assert len(hosts) == 8
    ips = sorted(set(hosts.values()))
    assert ips == [f"127.0.10.{i}" for i in range(1, 6)]
    sizes = sorted(list(hosts.values()).count(ip) for ip in ips)
    assert sizes == [1, 1, 1, 2, 3]  # one shared pair, one shared triple
    assert hosts["alpha.test"] == hosts["beta.test"]
    assert hosts["gamma.test"] == hosts["delta.test"] == hosts["epsilon.test"]


def test_ips_roll_over_into_next_slash24() -> None:
    hosts = assign_ips(WebSpec.many(600, 1))
    ips = list(hosts.values())
    assert len(set(ips)) == 600
    assert ips[0] == "127.0.10.1" and ips[253] == "127.0.10.254" and ips[254] == "127.0.11.1"
    for ip in ips:
        assert ipaddress.ip_address(ip) in ipaddress.ip_network("127.0.0.0/8")
        assert not ip.endswith((".0", ".255"))


def test_non_loopback_base_rejected() -> None:
    spec = WebSpec.shared_ip(2, 1)
    spec.base_ip = "10.0.0.1"
    with pytest.raises(ValueError, match=r"127\.0\.0\.0/8"):
        assign_ips(spec)


def test_many_and_shared_ip_constructors() -> None:
    spec = WebSpec.many(10, 20, ips=3, latency_ms=50)
    assert len(set(assign_ips(spec).values())) == 3
    assert all(h.latency_ms == 50 and h.pages == 20 for h in spec.hosts)
    skewed = WebSpec.many(10, 20, skew=1.0)
    sizes = [h.pages for h in skewed.hosts]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 3 * sizes[-1]
    assert abs(sum(sizes) - 200) <= 10
    assert len(set(assign_ips(WebSpec.shared_ip(7, 3)).values())) == 1


def test_spec_json_roundtrip_and_cli_forms() -> None:
    spec = WebSpec.demo()
    spec.hosts[0].status_overrides = {"/page/2": (503, {"Retry-After": "2"}, 1)}
    again = WebSpec.from_json(spec.to_json())
    assert again == spec
    assert parse_spec("demo") == WebSpec.demo()
    assert len(parse_spec("many:5:3:2").hosts) == 5
    assert len(parse_spec("shared_ip:4:2").hosts) == 4
    with pytest.raises(ValueError, match="unknown host spec keys"):
        WebSpec.from_dict({"hosts": [{"name": "x.test", "bogus": 1}]})


# ---- content ----------------------------------------------------------------------


def test_pages_are_deterministic(demo: Site) -> None:
    other = Site(WebSpec.demo(), PORT)
    for url in demo.pages():
        host, path = url.split("/")[2].split(":")[0], _path(url)
        assert demo.respond(host, path).body == other.respond(host, path).body
    assert demo.respond("alpha.test", "/page/1").body != demo.respond("beta.test", "/page/1").body


def test_link_styles_present(demo: Site) -> None:
    bodies = [demo.respond(u.split("/")[2].split(":")[0], _path(u)).body for u in demo.pages()]
    text = b"\n".join(bodies).decode()
    assert 'href="../page/' in text
    assert re.search(r'href="page/\d', text)
    assert 'href="/page/' in text
    assert f'href="http://beta.test:{PORT}/' in text  # cross-host absolute
    assert "<base href=" in text


def test_every_href_resolves_to_its_target(demo: Site) -> None:
    for url in demo.pages():
        host, path = url.split("/")[2].split(":")[0], _path(url)
        route = demo.route(host, path)
        response = HtmlResponse(url, body=demo.respond(host, path).body, encoding="utf-8")
        base = get_base_url(response)  # honours <base href>, like the crawler will
        for link in route.links:
            assert urljoin(base, link.href) == link.target, (url, link)


def test_unknown_paths_are_404(demo: Site) -> None:
    for path in ("/nope", "/page/0", "/page/999", "/page/01", "/calendar/2024/13", "/trap/b"):
        assert demo.respond("zeta.test", path).status == 404, path
    assert demo.respond("no-such.test", "/").status == 404


def test_special_routes(demo: Site) -> None:
    old = demo.respond("alpha.test", "/old")
    assert (old.status, old.headers["Location"]) == (301, f"http://alpha.test:{PORT}/page/1")
    assert demo.respond("alpha.test", "/elsewhere").headers["Location"].startswith("http://beta")
    assert b"Crawl-delay: 1" in demo.respond("delta.test", "/robots.txt").body
    assert b"Disallow: /private/" in demo.respond("gamma.test", "/robots.txt").body
    assert demo.respond("eta.test", "/robots.txt").status == 404
    assert demo.respond("gamma.test", "/private/secret").status == 200
    alias = demo.respond("beta.test", "/page/1?utm_source=x&utm_medium=y")
    assert alias.body == demo.respond("beta.test", "/page/1").body
    assert demo.respond("zeta.test", "/trap/a/a/a/a/a").status == 200
    assert demo.respond("zeta.test", "/calendar/2031/12").status == 200
    assert "ETag" in demo.respond("theta.test", "/page/2").headers


def test_expected_pages_set(demo: Site) -> None:
    pages = set(demo.pages())
    url = demo.url
    assert len(pages) == len(demo.pages())  # no duplicates
    for h in demo.spec.hosts:
        assert url(h.name) in pages
        assert {url(h.name, f"/page/{n}") for n in range(1, h.pages + 1)} <= pages
    assert url("zeta.test", "/calendar/2024/01") in pages
    assert url("zeta.test", "/trap/a") in pages
    assert url("zeta.test", "/calendar/2024/02") not in pages
    assert url("zeta.test", "/trap/a/a") not in pages
    assert url("gamma.test", "/private/secret") not in pages
    assert url("alpha.test", "/old") not in pages
    assert not any("robots.txt" in p or "utm_" in p or "#" in p for p in pages)
    copies = sum(h.near_duplicates for h in demo.spec.hosts)
    assert url("beta.test", "/copy/1") in pages  # near duplicates are pages too
    assert len(pages) == 8 + sum(h.pages for h in demo.spec.hosts) + 2 + copies


def _polite_crawl(site: Site) -> list[str]:
    """Reference crawl over real HTML with Scrapy's LinkExtractor (handles <base href>)."""
    extractor = LinkExtractor()
    robots = {}
    for name in site.hosts:
        r = site.respond(name, "/robots.txt")
        robots[name] = Protego.parse(r.body.decode()) if r.status == 200 else None
    queue, seen, fetched = deque(site.seeds()), set(), []
    while queue:
        url = normalize(queue.popleft())
        host = url.split("/")[2].split(":")[0]
        if url in seen or host not in site.hosts:
            continue
        seen.add(url)
        if robots[host] is not None and not robots[host].can_fetch(url, "*"):
            continue
        response = site.respond(host, _path(url))
        if 300 <= response.status < 400:
            queue.append(response.headers["Location"])
        elif response.status == 200:
            fetched.append(url)
            if not any(url.startswith(t) for t in site.trap_prefixes()):  # trap guard
                page = HtmlResponse(url, body=response.body, encoding="utf-8")
                queue.extend(link.url for link in extractor.extract_links(page))
    return fetched


@pytest.mark.parametrize(
    "spec",
    [WebSpec.demo(), WebSpec.many(6, 8, ips=2, skew=0.8), WebSpec.shared_ip(3, 5)],
    ids=["demo", "many", "shared"],
)
def test_html_crawl_matches_expected_pages(spec: WebSpec) -> None:
    site = Site(spec, PORT)
    assert sorted(_polite_crawl(site)) == sorted(site.pages())


def test_failing_robots_and_overrides() -> None:
    hosts = [
        HostSpec("down.test", pages=3, robots=503),
        HostSpec("forbidden.test", pages=3, robots=403),
        HostSpec(
            "flaky.test",
            pages=3,
            status_overrides={
                "/page/2": (503, {"Retry-After": "3"}, 2),
                "/page/3": (500, {}, None),
                "/moved": (301, {"Location": "http://forbidden.test:18080/page/1"}, None),
            },
        ),
    ]
    site = Site(WebSpec(hosts=hosts), PORT)
    down = site.respond("down.test", "/robots.txt")
    assert (down.status, down.headers["Retry-After"]) == (503, "1")
    pages = site.pages()
    assert not any("down.test" in p for p in pages)  # 5xx robots = disallow all
    assert site.url("forbidden.test", "/page/3") in pages  # 4xx robots = allow all
    assert [site.respond("flaky.test", "/page/2", hit).status for hit in range(3)] == [
        503,
        503,
        200,
    ]
    assert site.url("flaky.test", "/page/2") in pages  # transient failure: still a page
    assert site.url("flaky.test", "/page/3") not in pages  # permanent 500
    assert site.respond("flaky.test", "/moved").headers["Location"].endswith("/page/1")


def test_large_body() -> None:
    site = Site(WebSpec(hosts=[HostSpec("big.test", pages=1, large_body_kb=256)]), PORT)
    assert len(site.respond("big.test", "/large").body) >= 256 * 1024
    assert site.url("big.test", "/large") in site.pages()
