"""Redirect traps end to end: a real crawl of a web whose hosts each carry endless redirect
chains in five URL shapes (scripts/testweb/redirects.py: every URL of the space answers a
redirect to a new one), linked from their home pages and every tenth page.

No page of a chain is ever parsed, so no content verdict judges it, and every hop is a
URL nobody fetched: before redirect walks (admission/redirect_walks.py) only Scrapy's
REDIRECT_MAX_TIMES ended a chain, 21 requests for every link to a new start (1,560 of
2,504 requests of traps() with the five styles; bench/README.md, "Redirect traps").
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from scripts.testweb import HostSpec, WebSpec
from scripts.testweb.redirects import PATTERNS
from scripts.testweb.spec import REDIRECT_TRAP_STYLES
from tests.integration.test_crawl_budget import crawl_to_its_end

# Requests a chain space costs a host: one chain of PRIORITY_REDIRECT_WALK (3) hops, whose
# second and third are walks and close the pattern with the first recounted; 3 measured
# per space (each of "bounce"'s two shapes its own), 5 before the first was recounted. The
# "slug" style's hops are a fine pattern each: its family recounts the first too (3; 5
# when only the fine pattern did, while the family waited for a third hop).
MAX_SPACE_REQUESTS = 4


def redirect_web() -> WebSpec:
    """Three hosts of real pages, each with every redirect trap style."""
    styles = list(REDIRECT_TRAP_STYLES)
    hosts = [
        HostSpec("books.test", pages=60, sitemap=True, redirect_traps=styles),
        HostSpec("notes.test", "shared", pages=40, guide=[3, 4], redirect_traps=styles),
        HostSpec("press.test", "shared", pages=50, redirect_traps=styles),
    ]
    return WebSpec(hosts=hosts, seed=13, base_ip="127.0.54.1")


def space_of(path: str) -> str:
    bare = path.partition("?")[0]
    return next((s for s, p in PATTERNS.items() if re.fullmatch(p, bare)), "?")


def test_redirect_chains_close_and_the_crawl_ends_by_itself(tmp_path: Path) -> None:
    web, result, requests = crawl_to_its_end(redirect_web(), tmp_path)
    hops = [r for r in requests if web.site.kind(r["url"]) == "redirect_trap"]
    # bounce's two shapes, /jump/ and /land, count together: twice the room.
    counts = Counter((r["host"], space_of(r["path"])) for r in hops)
    over = {
        space: n
        for space, n in counts.items()
        if n > MAX_SPACE_REQUESTS * (2 if space[1] == "bounce" else 1)
    }
    assert not over, (over, counts)
    assert len(counts) == 3 * len(REDIRECT_TRAP_STYLES), counts  # every space was entered
    assert "'frontier/rejected/redirect_walk'" in result.log
