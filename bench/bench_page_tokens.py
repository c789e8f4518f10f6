"""What cutting stamped session tokens (crawlproj/page_tokens.py) costs per page, beside
the link extraction it follows, on the same page.

    .venv/bin/python bench/bench_page_tokens.py [--links 300] [--repeat 200]

Three pages of `--links` links each, built in memory: a plain documentation page (no
query links: the fast path), a wiki page (half its links `?title=..&action=edit`, too
few to carry a stamp), and a session page (every same-host link `?sid=<token>`: the cut
itself). For each, ms per page of extract_links (lxml parse and resolution) and of
cut_page_tokens over its links, and their ratio.
"""

from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path

from scrapy.http import HtmlResponse

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, table

from crawlproj.links import extract_links
from crawlproj.page_tokens import PageTokenConfig, cut_page_tokens

CONFIG = PageTokenConfig(enabled=True, min_links=3, share=0.8, min_chars=8)


def pages(n: int) -> dict[str, tuple[str, list[str]]]:
    """name -> (page URL, hrefs)."""
    half = n // 2
    return {
        "docs (no queries)": ("https://docs.test/guide/", [f"/guide/p{i}.html" for i in range(n)]),
        "wiki (half ?action=edit)": (
            "https://wiki.test/wiki/Main",
            [f"/index.php?title=P{i}&action=edit" for i in range(half)]
            + [f"/wiki/P{i}" for i in range(n - half)],
        ),
        "session (all ?sid=)": ("https://h.test/", [f"/p{i}?sid=9f2c41d07a5e" for i in range(n)]),
    }


def measure(name: str, url: str, hrefs: list[str], n: int) -> list[str]:
    body = "".join(f'<a href="{h}">x</a>' for h in hrefs)
    response = HtmlResponse(url, body=f"<html><body>{body}</body></html>".encode())
    links = extract_links(response)
    # A fresh response each time: the selector (the parse) is cached on a response.
    extract = timeit.timeit(lambda: extract_links(response.replace(body=response.body)), number=n)
    cut = timeit.timeit(lambda: cut_page_tokens(url, links, CONFIG), number=n)
    return [name, f"{extract / n * 1e3:.3f}", f"{cut / n * 1e3:.3f}", f"{cut / extract:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    rows = [
        measure(name, url, hrefs, args.repeat) for name, (url, hrefs) in pages(args.links).items()
    ]
    print(table(("page", "extract_links ms", "cut_page_tokens ms", "cut / extract"), rows))
    print(NOISE_NOTE)


if __name__ == "__main__":
    main()
