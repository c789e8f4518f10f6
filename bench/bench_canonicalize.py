"""Throughput of extensions.admission.canonical.Canonicalizer on a mix of typical links.

Run by hand: ``.venv/bin/python bench/bench_canonicalize.py [--seconds 2]``. Target: at
least 50,000 URLs/s on one core. Hosts repeat as on real pages (the authority cache is
part of what is measured); paths and queries are unique per URL.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extensions.admission.canonical import Canonicalizer

HOSTS = ["www.example.com", "Blog.Example.org", "shop.example.net:8080", "news.example.co.uk"]
PAGES = ["https://www.example.com/section/index.html", "http://blog.example.org/2024/05/post"]
WORDS = ["products", "category", "item", "news", "2024", "article", "page", "tag", "About-Us"]


def make_urls(count: int, seed: int = 1) -> list[tuple[str, str | None]]:
    """(url, base) pairs: ~45% absolute, ~40% relative, ~15% with tracking/odd escapes."""
    rng = random.Random(seed)
    urls: list[tuple[str, str | None]] = []
    for i in range(count):
        path = "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        kind = rng.random()
        if kind < 0.45:
            query = f"?id={i}&sort=asc" if rng.random() < 0.5 else ""
            urls.append((f"https://{rng.choice(HOSTS)}/{path}/{i}{query}", None))
        elif kind < 0.65:
            urls.append((f"/{path}/{i}.html", rng.choice(PAGES)))
        elif kind < 0.85:
            urls.append((f"../{path}/{i}?page={i % 7}#comments", rng.choice(PAGES)))
        else:
            urls.append(
                (
                    f"HTTP://{rng.choice(HOSTS)}/{path}/%7euser/{i}?utm_source=x&b=%2f&a={i}",
                    None,
                )
            )
    return urls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000, help="distinct URLs")
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum run time")
    args = parser.parse_args()
    urls = make_urls(args.count)
    canonicalize = Canonicalizer().canonicalize
    done, start = 0, time.perf_counter()
    while True:
        for url, base in urls:
            canonicalize(url, base)
        done += len(urls)
        elapsed = time.perf_counter() - start
        if elapsed >= args.seconds:
            break
    print(f"{done / elapsed:,.0f} URLs/s ({done:,} URLs in {elapsed:.2f}s)")


if __name__ == "__main__":
    main()
