"""Visible-text extraction for near-duplicate detection.

The fingerprint must see what a reader sees, minus the chrome every page of a
site shares (navigation, headers, footers, forms, scripts): chrome is identical
across a site, so leaving it in drags unrelated pages of one site towards each
other and drowns the small real differences between near-duplicates.

lxml's libxml2 HTML parser is used directly (not BeautifulSoup, not parsel
selectors): it is the fastest tolerant parser available with Scrapy, see
``bench/bench_neardup.py`` for the figures.
"""

from __future__ import annotations

import threading

from lxml import etree
from w3lib.encoding import html_to_unicode

# Elements whose whole subtree is not page content. The tail text after such an
# element belongs to its parent and is kept (strip_elements(with_tail=False)).
BOILERPLATE_TAGS: tuple[str, ...] = (
    "script",
    "style",
    "noscript",
    "nav",
    "footer",
    "header",
    "aside",
    "form",
    "template",
    "svg",
    # Not in the usual list but never prose either: embedded documents and
    # widgets whose fallback text is boilerplate ("Your browser does not...").
    "iframe",
    "object",
    "embed",
    "canvas",
    "button",
    "select",
)

# Elements explicitly hidden by the page itself (the HTML ``hidden`` attribute).
_HIDDEN = etree.XPath("//*[@hidden]")

# lxml parsers keep per-parse state and must not be shared between threads.
_local = threading.local()


def parser() -> etree.HTMLParser:
    parser: etree.HTMLParser | None = getattr(_local, "parser", None)
    if parser is None:
        # Input is always handed over as UTF-8 bytes (see to_utf8): a fixed
        # encoding skips libxml2's sniffing and sidesteps lxml's refusal to
        # parse str input that carries an XML encoding declaration.
        parser = etree.HTMLParser(
            encoding="utf-8",
            remove_comments=True,
            remove_pis=True,
            no_network=True,
            recover=True,
        )
        _local.parser = parser
    return parser


def to_utf8(html: str | bytes) -> bytes:
    if isinstance(html, str):
        return html.encode("utf-8", "surrogatepass")
    # Bytes straight off the wire: honour BOM / <meta charset> like a browser.
    _encoding, text = html_to_unicode(None, html)
    return text.encode("utf-8", "surrogatepass")


def fold_whitespace(text: str) -> str:
    """Collapse every run of (Unicode) whitespace, incl. &nbsp;, to one space."""
    return " ".join(text.split())


def visible_text(html: str | bytes) -> str:
    """Return the reader-visible text of an HTML document, boilerplate removed.

    Text nodes are joined with a space: block boundaries (``<p>a</p><p>b</p>``)
    must not glue words together, at the price of splitting the rare word that
    is broken by inline markup (``<b>W</b>ord``), which costs a fingerprint
    far less than merged words would.
    """
    data = to_utf8(html)
    if not data.strip():
        return ""
    try:
        root = etree.fromstring(data, parser())
    except etree.XMLSyntaxError:
        return ""
    if root is None:
        return ""
    etree.strip_elements(root, *BOILERPLATE_TAGS, with_tail=False)
    for element in _HIDDEN(root):
        drop_keep_tail(element)
    return fold_whitespace(" ".join(root.itertext()))


def drop_keep_tail(element: etree._Element) -> None:
    """Remove element from its tree, keeping the text that follows it."""
    parent = element.getparent()
    if parent is None:
        element.clear()
        return
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)
