"""Real documentation HTML installed from Debian's packages, as a labelled corpus.

Four manuals from four toolchains, so no one generator's habits decide:
git-doc (AsciiDoc), cmake-doc (Sphinx, families of near-identical variable
and property pages), python3.11-doc (Sphinx, index pages) and
postgresql-doc-15 (DocBook). .ci/run installs them (apt-get); a machine
without them skips the tests that need them, naming the packages.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

from extensions.content.main_text import page_text

PACKAGES = ("git-doc", "cmake-doc", "python3.11-doc", "postgresql-doc-15")
ROOTS: dict[str, str] = {
    "git": "/usr/share/doc/git-doc/*.html",
    "cmake": "/usr/share/doc/cmake-data/html/**/*.html",
    "python": "/usr/share/doc/python3.11/html/**/*.html",
    "postgresql": "/usr/share/doc/postgresql-doc-15/html/*.html",
}
MIN_PAGES = 3000  # what the four packages hold (3,841 pages in Debian 12)


@dataclass(frozen=True)
class DocPage:
    site: str
    path: str
    text: str  # page_text(html).text: what the pipeline fingerprints


def files() -> list[tuple[str, str]]:
    return [
        (site, path)
        for site, pattern in ROOTS.items()
        for path in sorted(glob.glob(pattern, recursive=True))
    ]


def installed() -> bool:
    return len(files()) >= MIN_PAGES


def load() -> list[DocPage]:
    return [DocPage(site, path, page_text(Path(path).read_bytes()).text) for site, path in files()]
