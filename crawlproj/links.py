"""Outlinks of a fetched page, each one a URL `scrapy.Request(url)` accepts.

A page is untrusted input: one `javascript:` or `mailto:` href, or one that does
not parse, used to raise in the spider's `scrapy.Request(url)` and lose every
link after it on the page. So each href is resolved on its own, and one that
cannot be fetched is skipped and counted instead:

- ``crawlproj/links/skipped/scheme``: not http(s) after joining (javascript:,
  mailto:, tel:, data:, ftp:, ...)
- ``crawlproj/links/skipped/unparsable``: urljoin or percent-encoding raised
  (bad IPv6 literal, port out of range, lone surrogate), or no usable host name
  (empty, white space or control characters in it)
- ``crawlproj/links/skipped/too_long``: longer than HREF_MAX_CHARS, not even joined
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import parsel
from lxml import etree
from scrapy.utils.response import get_base_url
from w3lib.url import safe_url_string

if TYPE_CHECKING:
    from scrapy.http import TextResponse

    from crawlproj.extractors import Stats

# Elements whose href leads to another document worth fetching. Run by lxml on the
# selector's tree: parsel wraps every attribute value in a Selector first (a third
# of the link extraction's time), and its get() is then str() of the value.
_LINK_XPATH = etree.XPath("//a/@href | //area/@href", smart_strings=False)

# Far above the longest request line web servers accept by default (8 KB in Apache
# and nginx), so nothing fetchable is cut even with URL_MAX_LENGTH = 0; a hostile
# attribute (100 KB and more) then costs a length check, not a join and an encoding.
HREF_MAX_CHARS = 32_768

_SKIPPED = "crawlproj/links/skipped/"

# URLs whose _fetchable answer is kept (a few MB at most, whatever the crawl's length),
# and (folder, href) pairs whose resolution is, for hrefs up to RESOLVED_MAX_CHARS.
FETCHABLE_CACHE_SIZE = 16_384
RESOLVED_MAX_CHARS = 2_048


class SkippedLink(ValueError):
    """An href that leads to no fetchable URL; `reason` is the stats suffix."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def extract_links(response: TextResponse, stats: Stats | None = None) -> list[str]:
    """Absolute http(s) URLs of the page's links (fragments cut), in document order, first
    occurrence only.

    <base href> is honoured, so relative links resolve the way a browser resolves
    them. Canonicalization and filtering are the frontier's job.
    """
    base = base_url(response)
    folder = _folder(base)  # once per page: every base-free href is joined to it
    seen: set[str] = set()
    links: list[str] = []
    for href in _hrefs(response):
        url, skipped = _link(base, folder, href)
        if skipped:
            if stats is not None:
                stats.inc_value(_SKIPPED + skipped)
            continue
        if url and url not in seen:
            seen.add(url)
            links.append(url)
    return links


def _hrefs(response: TextResponse) -> list[str]:
    hrefs = _LINK_XPATH(page_selector(response).root)
    assert isinstance(hrefs, list)  # a node-set query: always a list of str
    return [str(href) for href in hrefs]


def page_selector(response: TextResponse) -> parsel.Selector:
    """The page's selector, also for a page whose <base href> does not parse."""
    try:
        return response.selector
    except ValueError:
        # Scrapy's Selector joins the <base href> when it is built (w3lib raises on a
        # bad one) even with base_url given; parsel's own Selector does not.
        return parsel.Selector(text=response.text, type="html", base_url=response.url)


def base_url(response: TextResponse) -> str:
    """The page's <base href> joined to its URL; the URL itself when that base
    does not parse (a browser falls back to the document URL the same way)."""
    try:
        base = get_base_url(response)
    except ValueError:  # w3lib joins the <base href> and raises on a bad one
        return response.url
    return base if _fetchable(base) else response.url


def resolve_href(base: str, href: str) -> str:
    """The absolute URL `href` leads to from `base`, without its #fragment (a place in
    a document, never another one: the frontier's canonical form drops it too, and a
    manual's links to the sections of its pages would each cost an admission); "" for
    an empty or in-page href; SkippedLink when it leads to nothing `scrapy.Request`
    accepts."""
    url, skipped = _link(base, _folder(base), href)
    if skipped:
        raise SkippedLink(skipped)
    return url


def _link(base: str, folder: str, href: str) -> tuple[str, str]:
    """resolve_href's answer as (URL, "") or ("", the skip's stats suffix), `folder`
    being _folder(base)."""
    if len(href) > HREF_MAX_CHARS:
        return "", "too_long"
    href = href.strip().partition("#")[0]
    if not href:
        return "", ""
    if folder and _base_free(href):
        return _resolve_in(folder, href)
    try:
        return _resolve(base, href), ""
    except SkippedLink as skipped:
        return "", skipped.reason


def _base_free(href: str) -> bool:
    """Whether urljoin takes no more than the base's folder for `href`: not a query or
    parameters alone, not a scheme with a relative path ("http:x" and "http:" reuse the
    base's whole path), not "//" with neither host nor path (the base's URL again), and
    short enough to keep."""
    if len(href) > RESOLVED_MAX_CHARS:
        return False
    rest = href
    if href.startswith(("http://", "https://")):
        rest = href[href.index(":") + 1 :]
    elif ":" in href:
        return False
    return rest[0] not in "?;" and rest != "//" and not rest.startswith("//?")


def _folder(base: str) -> str:
    """`base` up to its path's last "/" ("" when it has no path): what urljoin takes
    from the base for any href but a query or a fragment."""
    authority = base.find("//")
    if authority < 0:
        return ""
    end = min(i for i in (base.find("?"), base.find("#"), len(base)) if i >= 0)
    start = base.find("/", authority + 2)
    if start < 0 or start >= end:
        return ""
    return base[: base.rfind("/", start, end) + 1]


# Navigation hrefs repeat on every page of a folder ("../genindex.html" on each of a
# Python manual's ~330-href pages): their join and check are answered from here, as
# _link's pair (an exception is not cached).
@functools.lru_cache(maxsize=FETCHABLE_CACHE_SIZE)
def _resolve_in(folder: str, href: str) -> tuple[str, str]:
    try:
        return _resolve(folder, href), ""
    except SkippedLink as skipped:
        return "", skipped.reason


def _resolve(base: str, href: str) -> str:
    try:
        url = urljoin(base, href)
        scheme = urlsplit(url).scheme
    except ValueError:
        raise SkippedLink("unparsable") from None
    if scheme not in ("http", "https"):
        raise SkippedLink("scheme")
    if not _fetchable(url):
        raise SkippedLink("unparsable")
    return url


# Most of a site's links are its navigation, the same URLs on every page: a bounded
# cache answers those without w3lib's percent-encoding pass (half of a link's cost).
@functools.lru_cache(maxsize=FETCHABLE_CACHE_SIZE)
def _fetchable(url: str) -> bool:
    """True when scrapy.Request(url) builds and the URL names a host to connect to."""
    try:
        # What scrapy.Request does to its URL (with its default encoding): when this
        # passes here, it passes there.
        parts = urlsplit(safe_url_string(url))
        parts.port  # noqa: B018  (raises ValueError on a port out of range)
    except ValueError:  # UnicodeError (a lone surrogate, a bad IDNA label) included
        return False
    host = parts.hostname or ""
    return bool(host) and host.isprintable() and " " not in host
