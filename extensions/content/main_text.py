"""The main content of a page: what near-duplicate and change checks look at.

Why main content and not the visible text: on a real site every page carries
the same navigation, sidebars, breadcrumbs and footer, and on a site about one
topic that shared furniture plus the shared vocabulary pulled distinct pages
within the fingerprint threshold (the Git tutorial and the Git User Manual
were "duplicates" of git(1)); and a page's furniture changes on its own (an
ad, a counter, a "last updated" line) while its text did not.

Extractor: resiliparse's main-content extraction (``extract_plain_text(...,
main_content=True)``), measured on 300 real documentation pages of ~34 KB
(PostgreSQL, Git, Python; 2-core machine): resiliparse 2.5 ms/page, jusText
18.8 ms, trafilatura 25.5 ms, our lxml visible text 1.5 ms. All three drop the
Sphinx navigation, "previous/next" and footers; resiliparse and trafilatura
keep code samples and tables, jusText drops short paragraphs of real text
(972 words/page kept vs 1,437 and 1,296). resiliparse is the one fast enough
for the >= 500 pages/s budget and is maintained (ChatNoir / web archive
tooling), so it is the extractor.

Furniture the extractor keeps: resiliparse decides by tags and text density,
so a layout built of plain ``<div>``s keeps its byline ("updated 3 May 2024 ·
5,123 views"), the ad box inside the article, "249 comments" and the comment
list in the main text, and a new date or counter would then count as an edit.
Before extraction, elements named like furniture are removed: class or id
tokens from the vocabulary CMS themes and ad/comment/share plugins use
(Readability's "unlikely candidates" list, WordPress' entry-meta / byline /
comments-area, ad-slot and sponsored boxes, breadcrumbs, newsletter and cookie
boxes), ``<time>`` elements, ``hidden`` ones, and ARIA landmarks that are not
content (banner, navigation, complementary, contentinfo). Matching is on whole
tokens and dash-separated stems (``ad``, ``ad-box``, ``post-date``), never on
substrings, so ``admonition`` or ``header-anchor`` stay. An id is a name too, except
on a document section or a heading: its id is made from its title ("Date Objects",
"Comments"), so only its class can name it furniture.

Fallback: resiliparse drops link lists as furniture, so index and
table-of-contents pages (Sphinx ``genindex-*``, ``contents``) come out as a
heading alone. When the main content is short (< FALLBACK_MIN_WORDS) and under
FALLBACK_RATIO of the visible words, the visible text is used instead: on such
pages the links are the content. (On the four doc sets: 67 of 3,841 pages.)
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from lxml import etree
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from extensions.content.visible_text import (
    drop_keep_tail,
    parser,
    to_utf8,
    visible_text,
)

FALLBACK_MIN_WORDS = 50
FALLBACK_RATIO = 0.1

# Whole class/id tokens that name furniture.
FURNITURE_TOKENS: tuple[str, ...] = (
    "ad", "ads", "advert", "adverts", "advertisement", "advertising", "adsbygoogle",
    "sponsor", "sponsored", "promo", "promoted", "banner", "byline", "dateline",
    "timestamp", "date", "published", "updated", "posted-on", "meta", "comments",
    "comment", "share", "sharing", "social", "related", "breadcrumb", "breadcrumbs",
    "newsletter", "subscribe", "cookie", "cookies", "popup", "modal", "sidebar",
    "widget", "footer", "masthead", "pagination", "pager", "toolbar", "views", "counter",
    "count", "counts", "stats", "hits", "colophon", "site-info", "copyright", "bottom",
)  # fmt: skip
# Stems that name furniture as the first or last dash-separated part of a token
# ("ad-slot", "comments-area", "post-date", "entry-meta").
FURNITURE_STEMS: tuple[str, ...] = (
    "ad", "ads", "advert", "sponsor", "promo", "banner", "byline", "comment",
    "comments", "share", "social", "related", "breadcrumb", "newsletter", "cookie",
    "sidebar", "widget", "footer", "meta", "date", "timestamp", "views", "count",
)  # fmt: skip
_LANDMARKS = frozenset(("banner", "navigation", "complementary", "contentinfo"))
# Documentation generators give sections and headings ids made from their titles (Sphinx
# <section id="date-objects">, DocBook <div class="sect2" id="ECPG-PGTYPES-DATE">), and a
# title may be "date Objects" or "Comments": on those an id names the section, not
# furniture (only a class can). Matched on ids too, Debian's four manuals lost 39
# sections of real text from their main content (Python's "date Objects", 1,676 words;
# PostgreSQL's whole COMMENT page, 1,318).
_SECTION_TAGS = frozenset(("section", "article", "h1", "h2", "h3", "h4", "h5", "h6"))
_SECTION_CLASSES = frozenset(
    ("section", "sect1", "sect2", "sect3", "sect4", "sect5", "simplesect", "chapter",
     "appendix", "preface", "part", "refentry", "refsection", "refsect1", "refsect2",
     "refsect3")
)  # fmt: skip
_TOKENS = frozenset(FURNITURE_TOKENS)
_STEMS = frozenset(FURNITURE_STEMS)
_PARTS = re.compile(r"[-_]")
# Elements that may be furniture (libxml2 finds them); each is then checked in
# Python. lxml, not resiliparse, for this step: iterating a resiliparse
# selector result costs time proportional to the document per element (80 ms
# an element on a 1 MB Sphinx page), and one CSS selector with every token and
# stem costs lexbor ~0.3 ms a page. One location step from the root, not a union
# (`//*[...] | //time`): same elements in the same order, no node-set merge (0.57 vs
# 0.87 ms a page on the doc sets).
_CANDIDATES = etree.XPath("descendant-or-self::*[@class or @id or @hidden or @role or self::time]")


@functools.lru_cache(maxsize=4096)
def is_furniture_name(names: str) -> bool:
    """True when a class/id value names furniture: a whole token of
    FURNITURE_TOKENS, or a token whose first or last dash/underscore part is a
    stem of FURNITURE_STEMS ("ad-slot", "comments_area", "entry-meta")."""
    for token in names.lower().split():
        if token in _TOKENS:
            return True
        parts = _PARTS.split(token)
        if len(parts) > 1 and (parts[0] in _STEMS or parts[-1] in _STEMS):
            return True
    return False


def _is_furniture(element: etree._Element) -> bool:
    if element.tag == "time" or element.get("hidden") is not None:
        return True
    if (element.get("role") or "") in _LANDMARKS:
        return True
    classes = element.get("class") or ""
    if is_furniture_name(classes):
        return True
    ident = element.get("id")
    return bool(ident) and not _is_section(element, classes) and is_furniture_name(ident)


def _is_section(element: etree._Element, classes: str) -> bool:
    """A document section or heading: its id is made from its title (see _SECTION_TAGS)."""
    if element.tag in _SECTION_TAGS:
        return True
    return any(token in _SECTION_CLASSES for token in classes.lower().split())


def strip_furniture(data: bytes) -> bytes | None:
    """A UTF-8 document (to_utf8's output) as UTF-8 HTML without the elements
    named as furniture (None when it does not parse)."""
    if not data.strip():
        return None
    try:
        root = etree.fromstring(data, parser())
    except etree.XMLSyntaxError:
        return None
    if root is None:
        return None
    # Document order, outermost first: an element inside one already removed
    # is removed again from the detached subtree, harmless and rare.
    for element in _CANDIDATES(root):
        if _is_furniture(element) and element.getparent() is not None:
            drop_keep_tail(element)
    return bytes(etree.tostring(root, encoding="utf-8", method="html"))


def _resiliparse_main(data: bytes) -> str:
    tree = HTMLTree.parse_from_bytes(data, "utf-8")
    if tree.body is None:
        return ""
    return extract_plain_text(
        tree,
        main_content=True,
        alt_texts=False,
        links=False,
        list_bullets=False,
        form_fields=False,
        noscript=False,
        preserve_formatting=False,
    )


def extract_main(html: str | bytes) -> str:
    """resiliparse's main content of the document, furniture removed (may be empty)."""
    data = to_utf8(html)  # the charset is decided once, here
    stripped = strip_furniture(data)
    text = _resiliparse_main(stripped) if stripped is not None else ""
    if text.strip():
        return text
    # libxml2 gives up on some hostile markup (nesting deeper than 256 levels)
    # where lexbor does not: then the page as it came, furniture and all.
    return _resiliparse_main(data)


Source = Literal["main", "visible", "none"]


@dataclass(frozen=True)
class PageText:
    text: str  # whitespace-folded
    source: Source  # which extraction it came from


def page_text(html: str | bytes) -> PageText:
    """Main content, or the visible text where the extractor found too little."""
    words = extract_main(html).split()
    main, n_main = " ".join(words), len(words)
    if n_main >= FALLBACK_MIN_WORDS:
        return PageText(main, "main")
    visible = visible_text(html)
    if n_main < FALLBACK_RATIO * len(visible.split()):
        return PageText(visible, "visible")
    if main:
        return PageText(main, "main")
    return PageText(visible, "visible" if visible else "none")
