"""The test web's generator traps (scripts/testweb/generator.py): unique prose on every page,
links only to new pages of the space, entries on the home page and every tenth real page,
and the real pages left as they were."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, deque
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from scripts.testweb import HostSpec, WebSpec
from scripts.testweb.__main__ import parse_spec
from scripts.testweb.generator import ENTRIES, NAV_STARTS
from scripts.testweb.sites import Site
from scripts.testweb.spec import GENERATOR_STYLES
from tests.unit.scripts.test_testweb_traps import PORT, _links, _paragraphs, _path, site

__all__ = ["site"]  # the fixture, imported for pytest

# The five shapes of a "mixed" page's links.
MIXED_SHAPES = (
    r"/mix/[a-z]+-[a-z]+",
    r"/mix/n/[1-9]\d{4,8}/",
    r"/mix/[a-z]+/[a-z]+\.html",
    r"/mix/[0-9a-f]{12}",
    r"/mix/q\?ref=[a-z]+&p=\d+",
)

# The URL shapes each style promises (spelt out here, not imported: they are the contract).
GENERATED = {
    "slugs": r"/gen/[a-z]+-[a-z]+",
    "ids": r"/item/[1-9]\d{4,8}",
    "tokens": r"/t/[0-9a-f]{20}/",
    "query": r"/lookup\?term=[a-z]+\+[a-z]+\+[a-z]+",
    "dirs": r"/lib/[a-z]+/[a-z]+\.html",
    "nav": r"/wander/[a-z]+-[a-z]+",
    "deep": r"/maze(?:/[a-z]+){2,4}",
    "root": r"/[a-z]+-[a-z]+-[a-z]+/",
    "mixed": "|".join(f"(?:{shape})" for shape in MIXED_SHAPES),
}


def test_a_mixed_space_mixes_its_links_shapes(tarpit: Site) -> None:
    """Its first 100 pages link all five shapes, none most of the links."""
    queue, shapes = deque([tarpit.url("tar.test", ENTRIES["mixed"])]), Counter[str]()
    for _ in range(100):
        fresh = _fresh(tarpit, _path(queue.popleft()))
        shapes.update(next(s for s in MIXED_SHAPES if re.fullmatch(s, _path(u))) for u in fresh)
        queue.extend(fresh)
    assert set(shapes) == set(MIXED_SHAPES)
    assert max(shapes.values()) < 0.5 * sum(shapes.values()), shapes


@pytest.fixture(scope="module")
def tarpit() -> Site:
    host = HostSpec("tar.test", pages=30, generators=list(GENERATOR_STYLES))
    return Site(WebSpec(hosts=[host]), PORT)


def _fresh(site: Site, path: str) -> list[str]:
    """The made-up pages a generator page links: home and the nav menu left out."""
    fixed = {site.url("tar.test", p) for p in ("/", *NAV_STARTS)}
    return [u for u in _links(site, "tar.test", path) if u not in fixed]


def _words(body: bytes) -> set[str]:
    return {w for p in _paragraphs(body) for w in re.findall(r"[a-z]+", p.lower())}


@pytest.mark.parametrize("style", GENERATOR_STYLES)
def test_generator_pages_are_unique_prose_linking_new_pages(tarpit: Site, style: str) -> None:
    entry = ENTRIES[style]
    assert re.fullmatch(GENERATED[style], entry) or entry == NAV_STARTS[0]
    fresh = _fresh(tarpit, entry)
    assert 2 <= len(fresh) <= 5
    assert all(re.fullmatch(GENERATED[style], _path(u)) for u in fresh), fresh
    links = _links(tarpit, "tar.test", entry)
    assert all(tarpit.kind(u) == "generator" for u in links if _path(u) != "/")
    starts = [tarpit.url("tar.test", p) for p in NAV_STARTS]
    assert (links[len(fresh) : len(fresh) + 5] == starts) == (style == "nav")
    first, second = tarpit.respond("tar.test", entry), tarpit.respond("tar.test", _path(fresh[0]))
    assert first.status == second.status == 200 and first.body != second.body
    paragraphs = _paragraphs(first.body)
    assert len(paragraphs) >= 3 and all(len(p.split()) >= 30 for p in paragraphs)
    a, b = _words(first.body), _words(second.body)
    assert len(a & b) / len(a | b) < 0.2  # no shared template: each page its own words
    again = Site(WebSpec(hosts=[tarpit.spec.hosts[0]]), PORT).respond("tar.test", entry)
    assert again.body == first.body  # seeded on the URL: the same bytes every run


@pytest.mark.parametrize("style", GENERATOR_STYLES)
def test_generator_spaces_never_link_back(tarpit: Site, style: str) -> None:
    """Following links 30 hops meets only new URLs, and the first 100 pages of a space
    link each made-up URL once (in-degree 1): the nav menu is its only repeat."""
    entry = tarpit.url("tar.test", ENTRIES[style])
    walk = [entry]
    for _ in range(30):
        walk.append(_fresh(tarpit, _path(walk[-1]))[-1])
    assert len(set(walk)) == len(walk) and all(tarpit.kind(u) == "generator" for u in walk)
    queue, linked, homes = deque([entry]), Counter[str](), 0
    for _ in range(100):
        path = _path(queue.popleft())
        homes += tarpit.url("tar.test", "/") in _links(tarpit, "tar.test", path)
        fresh = _fresh(tarpit, path)
        linked.update(fresh)
        queue.extend(fresh)
    assert max(linked.values()) == 1 and entry not in linked
    assert all(tarpit.kind(u) == "generator" for u in linked)
    assert 30 <= homes <= 70  # about half the pages link home


def test_home_and_every_tenth_page_link_each_style(tarpit: Site) -> None:
    home = {_path(u) for u in _links(tarpit, "tar.test", "/")}
    assert set(ENTRIES.values()) <= home
    assert all(tarpit.kind(tarpit.url("tar.test", p)) == "generator" for p in ENTRIES.values())
    found = {}
    for n in (10, 20):
        made_up = [u for u in _links(tarpit, "tar.test", f"/page/{n}") if tarpit.is_trap(u)]
        shapes = [
            s for u in made_up for s, shape in GENERATED.items() if re.fullmatch(shape, _path(u))
        ]
        assert sorted(shapes) == sorted(GENERATOR_STYLES) and len(made_up) == len(shapes)
        assert all(tarpit.kind(u) == "generator" for u in made_up)
        found[n] = set(made_up)
    assert not found[10] & found[20]
    for other in ("/page/11", "/page/15"):  # every tenth page only
        assert not any(tarpit.is_trap(u) for u in _links(tarpit, "tar.test", other))


def test_generator_urls_of_no_style_are_not_generator_pages(tarpit: Site) -> None:
    bad = "/gen/foo-bar /gen/crawler /item/1234 /item/01234 /item/1234567890 /t/4F1C/ "
    bad += "/lookup?term=polite+fetch /lookup?q=polite+fetch+queue /lib/archive/river.htm "
    bad += "/lib/archive/ /wander/start-6 /wander/start-0"
    for path in bad.split():
        assert tarpit.kind(tarpit.url("tar.test", path)) == "missing", path
    # One query page, two spellings of its space; other parameters (a session token) aside.
    same = "/lookup?term=polite%20fetch%20queue&s=1"
    assert (
        tarpit.respond("tar.test", same).body == tarpit.respond("tar.test", ENTRIES["query"]).body
    )


def test_generators_leave_the_real_pages_alone(tarpit: Site, site: Site) -> None:
    """The oracle never walks into a generator: on a plain host, and on the traps web
    with every host given all styles (as bench_traps --generators does)."""
    plain = Site(WebSpec(hosts=[HostSpec("tar.test", pages=30)]), PORT)
    assert plain.real_pages() == tarpit.real_pages() and plain.pages() == tarpit.pages()
    hosts = [dataclasses.replace(h, generators=list(GENERATOR_STYLES)) for h in site.spec.hosts]
    tarpits = Site(dataclasses.replace(site.spec, hosts=hosts), PORT)
    assert tarpits.real_pages() == site.real_pages()
    # A session host's tokens reach the generator links of its real pages: still one.
    tokened = [u for u in _links(tarpits, "news.test", "/page/10") if "/gen/" in u]
    assert len(tokened) == 1 and "?s=" in tokened[0] and tarpits.kind(tokened[0]) == "generator"


def test_generators_are_named_in_the_spec_json(tmp_path: Path) -> None:
    spec = WebSpec(hosts=[HostSpec("tar.test", pages=30, generators=["nav", "ids"])])
    (tmp_path / "web.json").write_text(spec.to_json())
    assert parse_spec(str(tmp_path / "web.json")) == spec  # the CLI's --spec FILE
    allowed = re.escape(str(list(GENERATOR_STYLES)))
    with pytest.raises(ValueError, match=rf"generators: unknown \['moat'\]; use any of {allowed}"):
        HostSpec.from_dict({"name": "x.test", "generators": ["slugs", "moat"]})


def test_a_wildcard_farm_with_prose_gives_each_made_up_host_words_of_its_own() -> None:
    def farm(prose: bool) -> Site:
        host = HostSpec("farm.test", pages=10, subdomain_trap=True, subdomain_prose=prose)
        return Site(WebSpec(hosts=[host]), PORT)

    with_prose, template = farm(True), farm(False)
    names = [u for u in _links(with_prose, "farm.test", "/") if u.startswith("http://w")]
    a, b = (urlsplit(u).hostname or "" for u in names[:2])
    first, second = with_prose.respond(a, "/").body, with_prose.respond(b, "/").body
    assert len(_paragraphs(first)) >= 3
    words_a, words_b = _words(first), _words(second)
    assert len(words_a & words_b) / len(words_a | words_b) < 0.2
    assert with_prose.kind(f"http://{a}:{PORT}/") == "subdomain"
    plain = template.respond(a, "/").body  # the template: one paragraph, its name in it
    assert len(_paragraphs(plain)) == 1 and a.split(".")[0] in plain.decode()
