"""A page's parse, apart from the spider's flow: its row fields (robots directives, the
canonical, the extractors' fields) and the links it lets a crawler follow. The spider
(web.py) and ``scrapy replay`` (stored bodies, no fetch) run the same two functions.

Stats: crawlproj/pages/<not_html|nofollow>.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scrapy.http import Response, TextResponse

from crawlproj.directives import page_directives
from crawlproj.extractors import Stats, registry
from crawlproj.links import extract_links
from crawlproj.page_tokens import PageTokenConfig, cut_page_tokens
from crawlproj.response_headers import is_html


@dataclass(frozen=True)
class PageParse:
    fields: dict[str, Any]  # noindex, canonical, extracted: merged into the row
    html: bool
    nofollow: bool


def parse_page(response: Response, token: str, stats: Stats | None = None) -> PageParse:
    """Row fields read from the page: robots directives, canonical, extractor fields."""
    directives = page_directives(response, token)
    html = response if isinstance(response, TextResponse) and is_html(response) else None
    extracted = registry.run(html, stats) if html is not None else {}
    fields = {
        "noindex": directives.noindex,
        "canonical": directives.canonical,
        "extracted": extracted or None,
    }
    return PageParse(fields, html is not None, directives.nofollow)


def follow_links(
    page: PageParse,
    response: Response,
    stats: Stats | None = None,
    tokens: PageTokenConfig | None = None,
) -> list[str]:
    """The page's outlinks, unless it is not HTML or says nofollow; with `tokens`, the
    session tokens stamped on them cut (crawlproj/page_tokens.py)."""
    if not page.html:
        _inc(stats, "crawlproj/pages/not_html")
        return []
    if page.nofollow:
        _inc(stats, "crawlproj/pages/nofollow")
        return []
    assert isinstance(response, TextResponse)
    links = extract_links(response)
    return cut_page_tokens(response.url, links, tokens, stats) if tokens else links


def _inc(stats: Stats | None, key: str) -> None:
    if stats is not None:
        stats.inc_value(key)
