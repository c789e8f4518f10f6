"""The test web's redirect traps (scripts/testweb/redirects.py): every URL of a space
answers a redirect to a new URL of the space, in the shape each style promises; starts on
the home page and every tenth real page; the real pages and the oracle's walk unchanged."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from scripts.testweb import HostSpec, WebSpec
from scripts.testweb.redirects import STARTS
from scripts.testweb.sites import Site
from scripts.testweb.spec import REDIRECT_TRAP_STYLES
from tests.unit.scripts.test_testweb_traps import PORT, _links

# The URL shapes each style promises, hop by hop (spelt out: they are the contract).
SHAPES = {
    "tokens": [r"/go/[0-9a-f]{16}"],
    "counter": [r"/hop/[1-9]\d*"],
    "query": [r"/out\?u=[0-9a-f]{12}"],
    "bounce": [r"/jump/[0-9a-f]{12}", r"/land\?from=[0-9a-f]{12}"],
    "slug": [r"/moved/[a-z]+-[a-z]+"],
}
HOST = "jump.test"


@pytest.fixture(scope="module")
def chains() -> Site:
    host = HostSpec(HOST, pages=30, redirect_traps=list(REDIRECT_TRAP_STYLES))
    return Site(WebSpec(hosts=[host]), PORT)


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


@pytest.mark.parametrize("style", REDIRECT_TRAP_STYLES)
def test_every_hop_redirects_to_a_new_url_of_its_space(chains: Site, style: str) -> None:
    path, seen = STARTS[style], set()
    for hop in range(30):
        route = chains.route(HOST, path)
        assert route.kind == "redirect_trap", path
        assert route.status == (301 if style == "slug" else 302)
        assert re.fullmatch(SHAPES[style][hop % len(SHAPES[style])], path), path
        seen.add(path)
        assert route.location is not None
        path = _path(route.location)
    assert len(seen) == 30  # never a URL twice: the chain does not end


def test_starts_on_the_home_page_and_every_tenth_page(chains: Site) -> None:
    home = {_path(u) for u in _links(chains, HOST, "/")}
    assert set(STARTS.values()) <= home
    tenth = [_path(u) for u in _links(chains, HOST, "/page/10")]
    for shapes in SHAPES.values():
        assert any(re.fullmatch(shapes[0], p) for p in tenth), tenth
    assert not any(
        p.startswith(("/go/", "/hop/")) for p in map(_path, _links(chains, HOST, "/page/11"))
    )


def test_the_real_pages_are_the_same_and_no_trap_is_one(chains: Site) -> None:
    plain = Site(WebSpec(hosts=[HostSpec(HOST, pages=30)]), PORT)
    assert chains.real_pages() == plain.real_pages()  # the oracle's walk ends
    assert chains.is_trap(chains.url(HOST, STARTS["bounce"]))
    assert not chains.is_trap(chains.url(HOST, "/page/10"))


def test_a_malformed_hop_is_not_the_spaces() -> None:
    site = Site(WebSpec(hosts=[HostSpec(HOST, pages=5, redirect_traps=["query"])]), PORT)
    assert site.route(HOST, "/out?u=nothex").kind != "redirect_trap"
