"""Throughput of the robots gate: RobotsVerdict.allows() with a cached verdict.

Run by hand: ``.venv/bin/python bench/bench_robots.py [--seconds 2]``. The robots.txt is a
realistic 50-rule file (three groups, wildcards, "$" anchors, percent-escapes); URLs are
unique per check, as the gate sees them. Also printed, for scale: the pure `allowed()`
(its compiled matcher comes from an LRU keyed by the text), Protego's own can_fetch on
the same file, and the one-off cost of parsing the file into a verdict.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protego import Protego

from extensions.robots.rules import RobotsPolicy, allowed
from extensions.robots.verdicts import verdict_from_response

UA = "crawlproj"
SECTIONS = ["products", "category", "search", "account", "cart", "blog", "news", "media"]

ROBOTS_TXT = """# robots.txt for www.example.com
User-agent: *
Disallow: /cart/
Disallow: /checkout/
Disallow: /account/
Allow: /account/login$
Disallow: /search
Allow: /search/help
Disallow: /*?sessionid=
Disallow: /*?sort=
Disallow: /*&sort=
Disallow: /*?filter=
Disallow: /*.json$
Disallow: /*.xml$
Allow: /sitemap*.xml$
Disallow: /api/
Disallow: /tmp/
Disallow: /print/
Disallow: /*/print$
Disallow: /media/private/
Allow: /media/
Disallow: /wp-admin/
Allow: /wp-admin/admin-ajax.php
Disallow: /%7Euser/
Disallow: /caf%C3%A9/
Disallow: /blog/drafts/
Disallow: /blog/*/preview
Disallow: /news/archive/19
Disallow: /*/feed/
Disallow: /*.pdf$
Disallow: /*/share/
Disallow: /go/
Allow: /go/about
Crawl-delay: 1

User-agent: crawlproj
Disallow: /cart/
Disallow: /checkout/
Disallow: /account/
Disallow: /search
Disallow: /*?sessionid=
Disallow: /*?sort=
Disallow: /api/
Allow: /api/public/
Disallow: /media/private/
Disallow: /blog/drafts/
Disallow: /blog/*/preview
Disallow: /*.pdf$
Disallow: /products/*/reviews?page=
Crawl-delay: 2

User-agent: BadBot
User-agent: EvilScraper
Disallow: /
Disallow: /products/
Disallow: /category/
Disallow: /blog/
Disallow: /news/
Disallow: /media/

Sitemap: https://www.example.com/sitemap.xml
"""


def make_urls(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    urls = []
    for i in range(count):
        path = "/".join(rng.choice(SECTIONS) for _ in range(rng.randint(1, 3)))
        # Mostly plain pages, some of the query strings and files that rules target.
        tail = rng.choice(["", "", ".html", ".html", f"?id={i}", ".pdf", "?sort=asc", "/print"])
        urls.append(f"https://www.example.com/{path}/{i}{tail}")
    return urls


def rate(check: Callable[[str], bool], urls: list[str], seconds: float) -> tuple[float, int]:
    done, blocked, start = 0, 0, time.perf_counter()
    while True:
        for url in urls:
            blocked += not check(url)
        done += len(urls)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed, blocked * len(urls) // done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=50_000, help="distinct URLs")
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum run time per row")
    args = parser.parse_args()
    rules = sum(line.split(":")[0] in ("Allow", "Disallow") for line in ROBOTS_TXT.splitlines())
    urls = make_urls(args.count)
    body = ROBOTS_TXT.encode()

    start, n = time.perf_counter(), 200
    for i in range(n):  # a distinct body each time, so no cache helps
        v = verdict_from_response(200, body + b"#%d" % i, {}, 0.0, RobotsPolicy(), UA)
        v.allows(urls[0], UA)
    parse_us = (time.perf_counter() - start) / n * 1e6

    verdict = verdict_from_response(200, body, {}, 0.0, RobotsPolicy(), UA)
    protego = Protego.parse(ROBOTS_TXT)
    rows = [
        ("RobotsVerdict.allows (gate)", lambda u: verdict.allows(u, UA)),
        ("allowed() pure", lambda u: allowed(ROBOTS_TXT, UA, u)),
        ("Protego.can_fetch (reference)", lambda u: protego.can_fetch(u, UA)),
    ]
    print(f"robots.txt: {rules} rules, {len(body)} bytes; {args.count:,} distinct URLs")
    for name, check in rows:
        per_s, blocked = rate(check, urls, args.seconds)
        print(f"{name:32s} {per_s:>12,.0f} checks/s   ({blocked:,} of {len(urls):,} blocked)")
    print(f"{'parse into a verdict (cold)':32s} {parse_us:>12,.0f} us per robots.txt")


if __name__ == "__main__":
    main()
