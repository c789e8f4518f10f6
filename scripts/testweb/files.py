"""Non-page files real documentation sites link: source listings, an image, a PDF, a zip.

A crawler's page budget and its duplicate and soft-404 statistics are about HTML pages;
these files are linked from every page (HostSpec.attachments) or beside each /page/N
(HostSpec.sources, /_sources/page-<n>.txt as Sphinx writes), with real content types, so a
test can check they are not counted, stored or mistaken for pages (Site.is_non_page).
"""

from __future__ import annotations

import functools
import io
import re
import struct
import zipfile
import zlib

from .prose import seeded_rng, sentence
from .routes import FamilyHandler, Link, Route, UrlFor, plain
from .spec import HostSpec

ATTACHMENTS = ("/static/logo.png", "/files/manual.pdf", "/files/examples.zip")


def _png() -> bytes:
    """A valid 1x1 red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        # A fixed timestamp: same spec, same bytes.
        archive.writestr(zipfile.ZipInfo("README.txt", (2024, 1, 1, 0, 0, 0)), "examples\n")
    return out.getvalue()


_PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


@functools.cache
def attachment(path: str) -> Route:
    body, content_type = {
        "/static/logo.png": (_png, "image/png"),
        "/files/manual.pdf": (lambda: _PDF, "application/pdf"),
        "/files/examples.zip": (_zip, "application/zip"),
    }[path]
    return Route("file", 200, body=body(), headers=(("Content-Type", content_type),))


class Files:
    """The non-page files of one host."""

    def __init__(self, h: HostSpec, url: UrlFor, seed: int) -> None:
        self.h, self.url, self.seed = h, url, seed

    def table(self) -> list[tuple[str, FamilyHandler]]:
        rows: list[tuple[str, FamilyHandler]] = []
        if self.h.sources:
            rows.append((r"/_sources/page-(\d+)\.txt", self._source))
        if self.h.attachments:
            rows += [(re.escape(p), lambda m, q: attachment(m.group(0))) for p in ATTACHMENTS]
        return rows

    def entries(self) -> list[str]:
        return []

    def real_paths(self) -> list[str]:
        return []

    def links(self, bare: str) -> list[Link]:
        """The files a real page at `bare` links."""
        out = []
        m = re.fullmatch(r"/page/(\d+)", bare)
        if self.h.sources and m:
            out.append(
                Link(
                    self.url(f"/_sources/page-{m.group(1)}.txt"), f"/_sources/page-{m.group(1)}.txt"
                )
            )
        if self.h.attachments:
            out += [Link(self.url(p), p) for p in ATTACHMENTS]
        return out

    def _source(self, m: re.Match[str], query: str) -> Route | None:
        n = int(m.group(1))
        if not (1 <= n <= self.h.pages and str(n) == m.group(1)):
            return None
        rng = seeded_rng(self.seed, "source", self.h.name, n)
        title = f"Page {n}"
        lines = [title, "=" * len(title), "", *(sentence(rng, 12) for _ in range(4))]
        return Route("source", 200, body=("\n".join(lines) + "\n").encode(), headers=plain())
