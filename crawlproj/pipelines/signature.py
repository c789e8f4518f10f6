"""A page's content signature: what the content pipelines and replay compare.

The body's content hash, and from the page's main text (extensions/content/main_text.py)
its text hash, simhash, MinHash sketch and template digest. The main text is extracted
once per response: the dedup and soft-404 pipelines both read it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.http import Response, TextResponse

from extensions.content.fingerprint import TextSignature, content_hash, signature
from extensions.content.main_text import PageText, page_text
from extensions.content.template import template_digest
from extensions.pagestore.protocol import is_html_type

if TYPE_CHECKING:
    from extensions.recrawl.state import DocState


@dataclass(frozen=True)
class Signature:
    content_hash: str | None  # None for an empty body
    text: TextSignature  # of the main text (all None, 0 words, when there is none)
    text_source: str  # main | visible | none | stored (not extracted: the stored copy's)
    template: str | None = None  # template digest of the main text (content/template.py)


# Each response's main text, extracted once (~2.8 ms a 14 KB page, bench/README.md "CPU
# per page"): the soft-404 check of a soft origin's pages reads it again. Weak: an entry
# goes with its response. Set and read in the pipelines' pools, one response at a time.
_page_texts: weakref.WeakKeyDictionary[TextResponse, PageText] = weakref.WeakKeyDictionary()


def response_page_text(response: TextResponse) -> PageText:
    """page_text(response.text), computed once per response."""
    found = _page_texts.get(response)
    if found is None:
        found = _page_texts[response] = page_text(response.text)
    return found


def content_signature(
    response: Response, content_type: str | None, body_hash: str | None = None
) -> Signature:
    """The content fields of a response; replay calls this too. body_hash: the body's
    content_hash, when the caller has it already."""
    body = response.body
    if not body:
        return Signature(None, signature(""), "none")
    source = "none"
    text = ""
    if isinstance(response, TextResponse):
        # response.text honours the header charset; the bytes alone would not.
        if is_html_type(content_type):
            extracted = response_page_text(response)
            text, source = extracted.text, extracted.source
        else:
            text, source = response.text, "main"
    template = template_digest(text, response.url) if text else None
    return Signature(body_hash or content_hash(body), signature(text), source, template)


def stored_signature(body_hash: str, prev: DocState) -> Signature:
    """The signature of a re-fetch whose body is the stored copy's: the stored one, its
    text not extracted again (~2 ms a 14 KB page, the bulk of a re-crawl of unchanged
    pages from servers that send no validators). No sketch: an unchanged page is not
    looked up in the near-duplicate index."""
    simhash = int(prev.simhash, 16) if prev.simhash else None
    return Signature(body_hash, TextSignature(0, prev.text_hash or None, simhash, None), "stored")
