"""`scrapy crawl web` over a real manual: Git's HTML documentation (Debian's git-doc)
served from its folder by an HTTP server on 127.0.31.3, as a new user would point the
crawler at a documentation site.

The complaint this pins: the word-based fingerprint marked the Git tutorial and the
Git User Manual as duplicates of git(1), git-diff-index of git-show, and did not store
them. Now every near duplicate the crawl reports must share at least half of its
5-word shingles with its original (exact, recomputed from the files), and the named
pages are stored as themselves.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from extensions.content.main_text import page_text
from scripts.crawlrun import run_crawl, write_seeds
from tests.corpus.evaluate import DISTINCT_BELOW, jaccard, shingle_set

ROOT = Path("/usr/share/doc/git-doc")
HOST = "git-docs.test"
ADDRESS = "127.0.31.3"
NAMED = ("gittutorial.html", "user-manual.html", "git-diff-index.html", "git-show.html")

pytestmark = pytest.mark.skipif(
    not (ROOT / "index.html").exists(), reason="needs Debian's git-doc (.ci/run installs it)"
)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def docs_site() -> Iterator[str]:
    server = ThreadingHTTPServer((ADDRESS, 0), functools.partial(_Quiet, directory=str(ROOT)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _text(url: str) -> str:
    return page_text((ROOT / urlsplit(url).path.lstrip("/")).read_bytes()).text


def test_a_crawl_of_the_git_manual_drops_no_distinct_page(docs_site: str, tmp_path: Path) -> None:
    seeds = write_seeds(tmp_path / "seeds.txt", [docs_site + "index.html"])
    # The .txt sources beside every page would double the crawl and test nothing new.
    settings = {
        "DNS_HOSTS_MAP": {HOST: ADDRESS},
        "FRONTIER_DELAY": 0,
        "URL_BLOCKLIST": r"re:\.txt$",  # a -s list is comma-separated, not JSON
        # Links out (git-scm.com, lore.kernel.org...) do not resolve here: drop them
        # at the first failure instead of retrying for 5 + 20 + 80 s.
        "FRONTIER_DNS_RETRIES": 0,
    }
    result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
    assert result.returncode == 0, result.log[-3000:]
    pages = [r for r in result.items if r["status"] == 200]
    assert len(pages) >= 200, len(pages)
    for row in pages:  # nothing is crawled past without its body or its original's
        assert row["content_ref"] or row["duplicate_of"], row["url"]
    near = [r for r in pages if r["duplicate_of"] and r["resemblance"] < 1.0]
    for row in near:
        truth = jaccard(shingle_set(_text(row["url"])), shingle_set(_text(row["duplicate_of"])))
        assert truth >= DISTINCT_BELOW, (row["url"], row["duplicate_of"], round(truth, 3))
    by_name = {urlsplit(r["url"]).path.rsplit("/", 1)[-1]: r for r in pages}
    for name in NAMED:
        assert by_name[name]["duplicate_of"] is None and by_name[name]["content_ref"], name
