"""Example extractor: pages of the local test web (hosts under the reserved .test TLD).

Copy this module to start an extractor for a real site: change the pattern,
return the fields the site's consumers need. Keep it a pure function of the
response (no requests, no state), so `scrapy replay` reproduces it exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawlproj.extractors import register
from crawlproj.links import extract_links

if TYPE_CHECKING:
    from scrapy.http import TextResponse

# Text nodes a reader sees in <body>: script and style content is not prose.
_BODY_TEXT = "//body//text()[not(ancestor::script) and not(ancestor::style)]"


@register("*.test")
def page_summary(response: TextResponse) -> dict[str, Any]:
    """title, first <h1>, words of body text and number of distinct outlinks."""
    title = response.xpath("normalize-space(//title)").get() or None
    heading = response.xpath("normalize-space((//h1)[1])").get() or None
    words = " ".join(response.xpath(_BODY_TEXT).getall()).split()
    return {
        "title": title,
        "heading": heading,
        "word_count": len(words),
        "outlinks": len(extract_links(response)),
    }
