"""RecentLinks: a worker's repeats of links it queued lately skip admission, unless
they bring a referring host not yet counted, or must reach the frontier anyway."""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from extensions.admission.prioritizer import PARENT_META
from extensions.admission.recent import RecentLinks, recent_links_of, register
from tests.unit.admission.golden_admission import admission


class LinkSpider(Spider):
    name = "links"

    def parse(self, response: object) -> None:
        return None


SPIDER = LinkSpider()


def link(url: str, parent: str = "http://h.test/index", **meta: object) -> Request:
    return Request(url, meta={"depth": 1, PARENT_META: (50, parent), **meta})


def queue(recent: RecentLinks, request: Request) -> bool:
    """What Batches.enqueue does: False for a dropped repeat."""
    if recent.repeats(request):
        return False
    recent.add(request, recent.admission.item(request, SPIDER))
    return True


def test_a_repeated_link_is_dropped_before_admission() -> None:
    recent = RecentLinks(admission(), 100)
    assert queue(recent, link("http://h.test/a"))
    assert not queue(recent, link("http://h.test/a"))
    assert queue(recent, link("http://h.test/b"))
    # Written differently, it is another raw URL: admission and URL-seen decide.
    assert queue(recent, link("http://h.test/a#top"))


def test_a_repeat_from_a_new_referring_host_goes_through_once() -> None:
    recent = RecentLinks(admission(), 100)
    assert queue(recent, link("http://h.test/a", parent="http://shop.test/1"))
    assert not queue(recent, link("http://h.test/a", parent="http://shop.test/2"))
    # cal.test links h.test for the first time: host importance counts it.
    assert queue(recent, link("http://h.test/a", parent="http://cal.test/x"))
    assert not queue(recent, link("http://h.test/a", parent="http://cal.test/y"))
    assert not queue(recent, link("http://h.test/a", parent="http://h.test/z"))  # same host


def test_dont_filter_and_sitemap_lastmod_requests_are_never_dropped() -> None:
    recent = RecentLinks(admission(), 100)
    assert queue(recent, link("http://h.test/a"))
    retry = Request("http://h.test/a", dont_filter=True)
    assert not recent.repeats(retry)
    assert not recent.repeats(link("http://h.test/a", lastmod="2026-11-30"))
    recent.add(retry, recent.admission.item(retry, SPIDER))  # no seen key: not kept
    assert len(recent._hosts) == 1


def test_the_memory_is_bounded_oldest_first_and_zero_keeps_nothing() -> None:
    recent = RecentLinks(admission(), 3)
    for n in range(5):
        assert queue(recent, link(f"http://h.test/{n}"))
    assert list(recent._hosts) == ["http://h.test/2", "http://h.test/3", "http://h.test/4"]
    assert queue(recent, link("http://h.test/0"))  # forgotten: admitted again (URL-seen drops it)
    off = RecentLinks(admission(), 0)
    assert queue(off, link("http://h.test/a")) and queue(off, link("http://h.test/a"))


def test_the_spider_asks_before_it_builds_a_request() -> None:
    """split (a page's links as URLs) answers as repeats does for the Requests the
    spider would build: same raw URL, same referring-host rule."""
    recent = RecentLinks(admission(), 100)
    assert queue(recent, link("http://h.test/a", parent="http://shop.test/1"))

    def repeats(url: str, page: str) -> bool:
        return url not in recent.split([url], page).request

    assert repeats("http://h.test/a", "http://shop.test/2")
    assert repeats("http://h.test/a", "http://h.test/z")
    assert not repeats("http://h.test/a", "http://cal.test/x")  # news: a new host
    assert not repeats("http://h.test/b", "http://h.test/z")  # never queued


def test_a_pages_links_split_into_new_and_known_counting_who_linked_again() -> None:
    """split (the spider's) counts, per queued link, the pages that linked it again: a
    site's menu is linked from every page (admission/sprawl.py); forgotten with it."""
    recent = RecentLinks(admission(), 3)
    assert queue(recent, link("http://h.test/menu"))
    for n in range(4):
        page = f"http://h.test/p{n}"
        split = recent.split(["http://h.test/menu", f"http://h.test/new{n}"], page)
        assert split.request == split.new == [f"http://h.test/new{n}"]
        assert split.known == ["http://h.test/menu"]
    assert recent.relinked("http://h.test/menu") == 4
    assert recent.relinked("http://h.test/new0") == 0
    # From another host: requested again (a referring host to count), and known.
    split = recent.split(["http://h.test/menu"], "http://cal.test/x")
    assert (split.request, split.new, split.known) == (
        ["http://h.test/menu"],
        [],
        ["http://h.test/menu"],
    )
    for n in range(3):  # evicted from the memory: its count goes with it
        assert queue(recent, link(f"http://h.test/other{n}"))
    assert recent.relinked("http://h.test/menu") == 0
    assert not recent._relinked


def test_the_open_schedulers_links_are_found_by_crawler() -> None:
    crawler, other = get_crawler(LinkSpider), get_crawler(LinkSpider)
    recent = RecentLinks(admission(), 100)
    register(crawler, recent)
    register(other, RecentLinks(admission(), 0))  # SEEN_LOCAL_CACHE = 0: nothing to ask
    assert recent_links_of(crawler) is recent
    assert recent_links_of(other) is None
