"""Links this worker queued lately, by their raw URL: repeats never reach admission.

A page's navigation repeats on every page of its site, so most outlinks of a crawl are
links it already queued, written the same way. Each would cost the whole admission path
(canonicalize, filters, prioritizer, patterns, record: ~40-70 us) and then the admit
script's URL-seen lookup, only to be counted a duplicate. The raw URL (as the page wrote
it) of every request this worker admitted is kept here with its host, bounded by
SEEN_LOCAL_CACHE (oldest first out); a repeat is dropped before admission.

A repeat still goes through when its link brings news: a referring host that has not
yet been counted for that host (host importance counts distinct referring hosts, in the
admit script). dont_filter requests and sitemap URLs carrying a <lastmod> (a re-crawl
hint) are never dropped here. The truth stays in Redis: this only saves work, and a
link it forgets is answered by the shard's URL-seen filter as before.

The spider asks too (`recent_links_of`, `split`), before it builds a Request for a
page's links: a repeat dropped there skips the Request, the spider middlewares and the
engine's scheduling as well (a page's links are mostly its site's navigation: on a
Python manual this cut ~9% of the crawl's CPU per page).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from extensions.admission.prioritizer import PARENT_META
from extensions.config import Setting, Table, at_least

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from extensions.admission.admit import Admission
    from extensions.admission.records import AdmitItem

V = TypeVar("V")


@dataclass(frozen=True)
class RecentConfig:
    capacity: int = 50_000  # SEEN_LOCAL_CACHE: raw URLs kept (~250 B each)


RECENT = Table(RecentConfig, Setting("SEEN_LOCAL_CACHE", "capacity", int, at_least(0)))


class LinkSplit(NamedTuple):
    """RecentLinks.split's answer for one page's links."""

    request: list[str]  # to request: new ones, and known ones that bring a referring host
    new: list[str]  # not queued by this worker lately
    known: list[str]  # queued by this worker lately (some of them in `request` again)


class RecentLinks:
    def __init__(self, admission: Admission, capacity: int) -> None:
        self.admission = admission
        self.capacity = capacity  # SEEN_LOCAL_CACHE; 0 keeps nothing
        # OrderedDict, not dict: evicting a dict's first key scans the deleted slots
        # before it (41 us per add at 50,000 entries, measured); popitem(last=False) is O(1).
        self._hosts: OrderedDict[str, str] = OrderedDict()  # raw URL -> host, oldest first
        self._pairs: OrderedDict[str, None] = OrderedDict()  # referrer pair keys sent
        # raw URL of _hosts -> pages that linked it again (split): a site's menu is linked
        # from every page, a link back into a section from a few (admission/sprawl.py).
        self._relinked: dict[str, int] = {}

    def repeats(self, request: Request) -> bool:
        """A link queued lately by this worker, with nothing new to tell the frontier."""
        if request.dont_filter or "lastmod" in request.meta:
            return False
        return self._repeats(request.url, request.meta.get(PARENT_META))

    def split(self, links: list[str], parent_url: str) -> LinkSplit:
        """A page's links, before their Requests exist (the spider's check, answering as
        `repeats` does for the Requests it would build: a link as the Request would spell
        it, an already safe URL being its own request.url; any other spelling just misses
        here): those to request, those new to this worker, and those it queued before (a
        repeat, or one requested again for the referring host it brings); each of the last
        counts one more page that linked it (relinked)."""
        out = LinkSplit([], [], [])
        relinked = self._relinked
        parent = (None, parent_url)
        for url in links:
            if url not in self._hosts:
                out.request.append(url)
                out.new.append(url)
                continue
            relinked[url] = relinked.get(url, 0) + 1
            out.known.append(url)
            if not self._repeats(url, parent):
                out.request.append(url)
        return out

    def relinked(self, url: str) -> int:
        """Pages (split by this worker) that linked `url` again after it was queued."""
        return self._relinked.get(url, 0)

    def _repeats(self, url: str, parent: tuple[float | None, str] | None) -> bool:
        host = self._hosts.get(url)
        if host is None:
            return False
        pair = self.admission.referrer_key(parent, host)
        return not pair or pair in self._pairs

    def add(self, request: Request, item: AdmitItem) -> None:
        """`item` (admission's for `request`) goes to the frontier."""
        if not item.seen_key:
            return
        evicted = _bounded_put(self._hosts, request.url, item.host, self.capacity)
        if evicted is not None:
            self._relinked.pop(evicted, None)
        if item.referrer:
            _bounded_put(self._pairs, item.referrer, None, self.capacity)


def _bounded_put(entries: OrderedDict[str, V], key: str, value: V, cap: int) -> str | None:
    """Put key -> value, evicting the oldest entry at `cap`; the evicted key, if any."""
    if cap <= 0 or key in entries:
        return None
    evicted = None
    if len(entries) >= cap:
        evicted = entries.popitem(last=False)[0]  # the oldest
    entries[key] = value
    return evicted


# The open scheduler's RecentLinks per crawler, for the spider (register, recent_links_of).
_by_crawler: weakref.WeakKeyDictionary[Crawler, RecentLinks] = weakref.WeakKeyDictionary()


def register(crawler: Crawler, recent: RecentLinks) -> None:
    """`recent` answers the spider's split for this crawler (a scheduler opened)."""
    if recent.capacity > 0:
        _by_crawler[crawler] = recent


def recent_links_of(crawler: Crawler) -> RecentLinks | None:
    """The crawler's RecentLinks; None without the frontier scheduler or with it off."""
    return _by_crawler.get(crawler)


def count_repeat(stats: StatsCollector | None, n: int = 1) -> None:
    """Count n repeats dropped in this worker, by the spider or the scheduler alike: a
    duplicate to the frontier's figures (the admit script counts the others) and a
    local drop."""
    if stats is not None and n:
        stats.inc_value("frontier/duplicate", n)
        stats.inc_value("seen/dropped_local", n)
