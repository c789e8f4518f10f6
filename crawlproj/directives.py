"""Page-level robots directives and the declared canonical URL.

`<meta name="robots">`, `<meta name="<our token>">` and X-Robots-Tag headers, the
latter optionally scoped to a user agent ("googlebot: noindex" binds only Googlebot).
nofollow stops link extraction; noindex is recorded on the item (the page is still
fetched, and stored: whether to index it is the consumer's call). `none` means both.

The declared canonical (`<link rel="canonical">` or a Link header) is recorded on the
row, and ``declares_variant`` reads it for trap feedback: a shop's filter and sort
pages, a CMS's session and tracking copies name the page they are a variant of, and
say so whatever their content (a filter page lists its own products: no duplicate
check sees it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.http import TextResponse

from crawlproj.links import SkippedLink, base_url, page_selector, resolve_href
from extensions.admission.canonical import canonicalize
from extensions.admission.path_facets import FILTER_NAMES, PAGINATION, facet_run
from extensions.admission.patterns import split_url
from extensions.admission.url_params import PAGE_PARAMS

if TYPE_CHECKING:
    from scrapy.http import Response

# Directive names we act on or must not mistake for a user-agent scope.
_KNOWN = frozenset(
    {"all", "none", "noindex", "nofollow", "index", "follow", "noarchive", "nosnippet",
     "notranslate", "noimageindex", "unavailable_after", "max-snippet", "max-image-preview",
     "max-video-preview", "indexifembedded"}
)  # fmt: skip
_LINK_CANONICAL = re.compile(r'<([^>]*)>\s*;[^,]*\brel="?canonical"?', re.I)


@dataclass(frozen=True)
class PageDirectives:
    noindex: bool = False
    nofollow: bool = False
    canonical: str | None = None


def _apply(words: list[str], noindex: bool, nofollow: bool) -> tuple[bool, bool]:
    for word in words:
        if word == "none":
            noindex = nofollow = True
        elif word == "noindex":
            noindex = True
        elif word == "nofollow":
            nofollow = True
    return noindex, nofollow


def header_words(value: str, token: str) -> list[str]:
    """Directives of one X-Robots-Tag value that bind `token` (an unscoped value
    binds everyone; "bot: a, b" binds only bot)."""
    head, sep, rest = value.partition(":")
    scope = head.strip().lower()
    if sep and scope not in _KNOWN and " " not in scope:
        if scope != token:
            return []
        value = rest
    return [w.strip().lower().split(":", 1)[0] for w in value.split(",") if w.strip()]


def page_directives(response: Response, token: str) -> PageDirectives:
    token = token.lower()
    noindex = nofollow = False
    for raw in response.headers.getlist(b"X-Robots-Tag"):
        noindex, nofollow = _apply(header_words(raw.decode("latin-1"), token), noindex, nofollow)
    canonical = _canonical_from_header(response)
    # Every Response has .xpath in Scrapy 2.19, but only TextResponse can run it.
    if isinstance(response, TextResponse):
        noindex, nofollow, found = _from_html(response, token, noindex, nofollow)
        canonical = found or canonical
    return PageDirectives(noindex, nofollow, canonical)


def _from_html(
    response: TextResponse, token: str, noindex: bool, nofollow: bool
) -> tuple[bool, bool, str | None]:
    selector = page_selector(response)  # a bad <base href> must not cost the page
    if selector.type not in ("html", "xml"):
        # A JSON or plain-text body (one cut at its headers arrives too) has no <meta>:
        # parsel refuses XPath on it, and the page's row would be lost to the error.
        return noindex, nofollow, None
    for meta in selector.xpath("//meta[@name][@content]"):
        name = (meta.attrib.get("name") or "").strip().lower()
        if name in ("robots", token):
            words = [w.strip().lower() for w in meta.attrib["content"].split(",")]
            noindex, nofollow = _apply(words, noindex, nofollow)
    href = selector.xpath("//link[translate(@rel, 'CANONIAL', 'canonial')='canonical']/@href").get()
    return noindex, nofollow, _joined(base_url(response), href or "")


def _joined(base: str, href: str) -> str | None:
    """An absolute canonical URL, None for an empty or unusable one."""
    try:
        return resolve_href(base, href) or None
    except SkippedLink:
        return None


def _canonical_from_header(response: Response) -> str | None:
    for raw in response.headers.getlist(b"Link"):
        match = _LINK_CANONICAL.search(raw.decode("latin-1"))
        if match:  # RFC 8288: relative to the response's URL, not to a <base href>
            return _joined(response.url, match.group(1).strip())
    return None


def declares_variant(url: str, declared: str | None) -> bool:
    """Whether a page's declared canonical names another page it is a variant of: the
    same host and path with some of its query parameters (a filter, sort, session or
    tracking one added), or a path it extends by filter segments only
    (/shop/shoes/f/color-red/ -> /shop/shoes/). Not when what it adds only pages the
    listing or names a document by number (a CMS template whose canonical drops the id:
    /article.php?id=7 -> /article.php), nor a canonical on another host (a mirror,
    another docs version) or one naming the site's root from a path (a theme that names
    its home on every page)."""
    mine, theirs = canonicalize(url), canonicalize(declared) if declared else None
    if not mine or not theirs or mine == theirs:
        return False
    page, named = split_url(mine), split_url(theirs)
    if page.host != named.host:
        return False
    if page.path == named.path:
        return _adds_a_filter(page.query, named.query)
    if named.path == "/" or named.query or not page.path.startswith(named.path):
        return False
    run = facet_run(page.path)
    if not run.segments or set(run.names) <= PAGINATION:
        return False
    # What the page adds is the run, after at most one marker segment ("f", "filter").
    extra = page.path[len(named.path) :].strip("/").split("/")
    before_run = extra[: max(len(extra) - run.segments, 0)]
    return not before_run or (
        len(before_run) == 1 and before_run[0].isalpha() and len(before_run[0]) <= 8
    )


def _adds_a_filter(query: str, named_query: str) -> bool:
    """Whether a query holds the declared one's parameters and more, and what it adds is
    neither only paging (PAGE_PARAMS) nor only numbers naming a document (a number
    under a name no filter has: ?id=7, ?article=12)."""
    mine = set(query.split("&")) if query else set()
    named = set(named_query.split("&")) if named_query else set()
    if not named < mine:
        return False
    added = [p.partition("=") for p in mine - named]
    if all(name.lower() in PAGE_PARAMS for name, _, _ in added):
        return False
    return not all(v.isdigit() and name.lower() not in FILTER_NAMES for name, _, v in added)
