"""The response headers a page's row and parse read (the spider's, crawlproj/spiders/web.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.http import Response

# Response headers kept on the row because they change how the body is read.
PARSE_HEADERS = ("Content-Type", "X-Robots-Tag", "Link")


def parse_headers(response: Response) -> dict[str, list[str]]:
    """PARSE_HEADERS present on the response, name -> values (latin-1 decoded)."""
    found: dict[str, list[str]] = {}
    for name in PARSE_HEADERS:
        values = response.headers.getlist(name)
        if values:
            found[name] = [v.decode("latin-1") for v in values]
    return found


def header(response: Response, name: bytes) -> str | None:
    raw = response.headers.get(name)
    if not raw:
        return None
    return raw.decode("latin-1").strip() or None


def content_type(response: Response) -> str | None:
    raw = response.headers.get(b"Content-Type")
    if not raw:
        return None
    return raw.decode("latin-1").split(";", 1)[0].strip().lower() or None


def is_html(response: Response) -> bool:
    kind = content_type(response)
    return kind is None or kind in ("text/html", "application/xhtml+xml")
