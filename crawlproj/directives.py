"""Page-level robots directives and the declared canonical URL.

`<meta name="robots">`, `<meta name="<our token>">` and X-Robots-Tag headers, the
latter optionally scoped to a user agent ("googlebot: noindex" binds only Googlebot).
nofollow stops link extraction; noindex is recorded on the item (the page is still
fetched, and stored: whether to index it is the consumer's call). `none` means both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.http import TextResponse

from crawlproj.links import SkippedLink, base_url, page_selector, resolve_href

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
