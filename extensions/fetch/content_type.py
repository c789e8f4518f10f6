"""Responses of unwanted media types are cut at their headers: the body never downloads.

A link's extension does not always say what it serves (an extensionless URL answering
with a PDF, a large text/plain dump), and tried on a documentation site behind nginx,
27% of all requests went to files that are not pages. Scrapy 2.19 sends
`headers_received` once the status line and headers are in, before the body is read;
a handler raising ``StopDownload(fail=False)`` makes the HTTP/1.1 handler close the
connection and hand the request's *callback* a normal response with the headers, an
empty body and ``flags == ["download_stopped"]`` (``http11._cb_bodyready``,
``make_response``; no errback). That response then travels like any other: the
frontier's downloader middleware reports the fetch (the IP is charged, the lease acked),
``request_left_downloader`` fires, the spider sees a non-HTML page (no links) and the
metadata row records the document and its type.

Never cut: robots.txt (frontier_robots meta, or the /robots.txt path: RFC 9309 names
no media type and servers send text/plain), sitemaps (the "sitemap" meta robots.txt
sitemaps carry, or a .xml/.xml.gz path: nginx serves .gz as application/octet-stream),
and a response without Content-Type (nothing says it is not a page).

Stats:
    fetch/content_type/kept               the body is downloaded
    fetch/content_type/aborted/<type>     cut at the headers; <type> is the media type
                                          (the first MAX_TYPE_STATS distinct ones, then "other")
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured, StopDownload
from scrapy.utils.httpobj import urlparse_cached

from extensions.config import STRINGS, Setting, Table, read, satisfies

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http.headers import Headers
    from scrapy.statscollectors import StatsCollector

STAT_PREFIX = "fetch/content_type/"
# A hostile server could send a new type per response: stats names stay bounded.
MAX_TYPE_STATS = 64

_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*", re.I)
_SITEMAP_PATH = re.compile(r"\.xml(?:\.gz)?$", re.I)


def robots_or_sitemap_path(path: str) -> bool:
    """/robots.txt, or a sitemap-shaped path (.xml, .xml.gz): read whatever their
    extension or media type says (the admission filter asks this too)."""
    return path == "/robots.txt" or _SITEMAP_PATH.search(path) is not None


def media_type(headers: Headers) -> str | None:
    """The Content-Type's type/subtype, lower-cased; None if absent or empty."""
    raw = headers.get(b"Content-Type")
    if not raw:
        return None
    return raw.decode("latin-1").split(";", 1)[0].strip().lower() or None


def _entries(types: tuple[str, ...]) -> frozenset[str]:
    """The listed types, lower-cased; blanks dropped ("-s CONTENT_TYPES_WANTED=" is [""])."""
    return frozenset(t.strip().lower() for t in types if t.strip())


@dataclass(frozen=True)
class ContentTypeSettings:
    wanted: tuple[str, ...]  # media types whose bodies are downloaded; () = all


CONTENT_TYPES = Table(
    ContentTypeSettings,
    Setting(
        "CONTENT_TYPES_WANTED",
        "wanted",
        STRINGS,
        satisfies(
            lambda types: all(map(_MEDIA_TYPE.fullmatch, _entries(types))),
            "media types like text/html",
        ),
    ),
)


class ContentTypeFilter:
    """Extension: raises StopDownload(fail=False) at the headers of an unwanted type."""

    def __init__(self, wanted: frozenset[str], stats: StatsCollector) -> None:
        self.wanted = wanted
        self.stats = stats
        self._counted: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentTypeFilter:
        try:
            wanted = _entries(read(CONTENT_TYPES, crawler.settings).wanted)
        except ValueError as exc:
            raise NotConfigured(str(exc)) from None
        if not wanted:
            raise NotConfigured("CONTENT_TYPES_WANTED is empty: every body is downloaded")
        assert crawler.stats is not None
        ext = cls(wanted, crawler.stats)
        crawler.signals.connect(ext.headers_received, signal=signals.headers_received)
        return ext

    def headers_received(self, headers: Headers, request: Request, **kwargs: Any) -> None:
        found = media_type(headers)
        if found is None or found in self.wanted or self._exempt(request):
            self.stats.inc_value(STAT_PREFIX + "kept")
            return
        self.stats.inc_value(f"{STAT_PREFIX}aborted/{self._stat_name(found)}")
        raise StopDownload(fail=False)

    @staticmethod
    def _exempt(request: Request) -> bool:
        meta = request.meta
        if "frontier_robots" in meta or meta.get("sitemap"):
            return True
        return robots_or_sitemap_path(urlparse_cached(request).path)

    def _stat_name(self, found: str) -> str:
        if found in self._counted:
            return found
        if len(self._counted) >= MAX_TYPE_STATS or not _MEDIA_TYPE.fullmatch(found):
            return "other"
        self._counted.add(found)
        return found
