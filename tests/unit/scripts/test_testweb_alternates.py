"""The test web's alternate views (scripts/testweb/alternates.py): every real page links
its own views, each view is kind "alternate" and a copy of its page (the same title and
prose; a share button's the same bytes), and the real pages and the oracle's walk stay
what they were."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from scripts.testweb import HostSpec, WebSpec
from scripts.testweb.sites import Site
from scripts.testweb.spec import ALTERNATE_STYLES
from tests.unit.scripts.test_testweb_traps import PORT, _links, _paragraphs

HOST = "views.test"


@pytest.fixture(scope="module")
def views() -> Site:
    host = HostSpec(HOST, pages=20, guide=[2, 3], alternates=list(ALTERNATE_STYLES))
    return Site(WebSpec(hosts=[host]), PORT)


def _queries(site: Site, path: str) -> list[str]:
    return [urlsplit(u).query for u in _links(site, HOST, path) if urlsplit(u).path == path]


@pytest.mark.parametrize("path", ["/", "/page/7", "/guide/part-2/", "/guide/part-1/chapter-3"])
def test_every_real_page_links_its_views(views: Site, path: str) -> None:
    queries = _queries(views, path)
    replies = [q for q in queries if q.startswith("replytocom=")]
    assert 2 <= len(replies) <= 5
    assert {"print=1", "share=twitter", "share=email", "action=edit", "action=history"} <= set(
        queries
    )
    for q in queries:
        assert views.kind(views.url(HOST, f"{path}?{q}")) == "alternate"


def test_views_are_copies_of_their_page(views: Site) -> None:
    page = views.respond(HOST, "/page/7").body
    assert views.respond(HOST, "/page/7?share=facebook").body == page  # the page itself
    prose = _paragraphs(page)
    for q in ("replytocom=123", "print=1", "action=edit"):
        copy = _paragraphs(views.respond(HOST, f"/page/7?{q}").body)
        assert set(prose) <= set(copy) and len(copy) == len(prose) + 1, q
    old = _paragraphs(views.respond(HOST, "/page/7?oldid=4242").body)
    assert len(set(prose) - set(old)) == 1  # one paragraph as it was


def test_a_history_lists_old_revisions(views: Site) -> None:
    oldids = [u for u in _links(views, HOST, "/page/7?action=history") if "oldid=" in u]
    assert len(oldids) == 3
    assert all(views.kind(u) == "alternate" for u in oldids)


def test_the_real_pages_are_the_same_and_no_view_is_one(views: Site) -> None:
    plain = Site(WebSpec(hosts=[HostSpec(HOST, pages=20, guide=[2, 3])]), PORT)
    assert views.real_pages() == plain.real_pages()
    assert views.kind(views.url(HOST, "/page/7?utm_source=x")) == "page"  # no view named
    assert not views.is_trap(views.url(HOST, "/page/7"))
