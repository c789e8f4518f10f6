"""Outlinks of a fetched page."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.http import TextResponse

# Elements whose href leads to another document worth fetching.
_LINK_XPATH = "//a/@href | //area/@href"


def extract_links(response: TextResponse) -> list[str]:
    """Absolute URLs of the page's links, in document order, first occurrence only.

    response.urljoin honours <base href>, so relative links resolve the way a
    browser resolves them. Canonicalization and filtering are the frontier's job.
    """
    seen: set[str] = set()
    links: list[str] = []
    for href in response.xpath(_LINK_XPATH).getall():
        href = href.strip()
        if not href or href.startswith("#"):
            continue
        url = response.urljoin(href)
        if url not in seen:
            seen.add(url)
            links.append(url)
    return links
