"""Alternate views of every real page (scripts/testweb/alternates.py): a blog's
`?replytocom=<comment>` copies, print views, share buttons, a wiki's edit and history tabs
beside real pages that link files (an image, a PDF, a zip) and a calendar. The views are
copies of their page; trap feedback closes each view's pattern after a few, whatever the
page's other links, and every real page is still reached."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

from scripts.testweb import HostSpec, WebSpec
from tests.integration.test_crawl_budget import crawl_to_its_end, crawl_with_workers

STYLES = ["replytocom", "print", "share", "history"]
# Views a host of 40-70 real pages costs: a few per view until views of two pages teach
# their parameter, 5-13 a host measured (6-17 when only the same text taught one; before
# links the admission refuses stopped counting as a copy's new items, 235).
MAX_VIEWS_PER_HOST = 25
# A shop whose products are slugs with a number (/shop/shoes/blue-shoe-12), each a URL
# pattern of its own, with reply copies of words of their own (trap prose): the copies are
# judged with their siblings' (the family /shop/shoes/<W>?replytocom): 24 views measured,
# 103 when each product's copies were judged alone (3 a product).
MAX_SLUG_SHOP_VIEWS = 50
# Two workers: a crawl long enough (~20 s) that both lease pages of every host.
LATENCY_MS = 40


def views_web(latency_ms: float = 0.0) -> WebSpec:
    blog = HostSpec("blog.test", pages=40, guide=[3, 4], attachments=True, alternates=STYLES)
    blog.calendars = ["archive"]
    wiki = HostSpec("wiki.test", pages=50, sources=True, alternates=["history", "print"])
    wiki.attachments = True
    plain = HostSpec("plain.test", pages=60, alternates=["replytocom", "share"])
    hosts = [dataclasses.replace(h, latency_ms=latency_ms) for h in (blog, wiki, plain)]
    return WebSpec(hosts=hosts, seed=23, base_ip="127.0.58.1")


def test_alternate_views_close_and_every_real_page_is_reached(tmp_path: Path) -> None:
    web, result, requests = crawl_to_its_end(views_web(), tmp_path)  # reaches every real page
    views = Counter(r["host"] for r in requests if web.site.kind(r["url"]) == "alternate")
    assert views, "the web serves no alternate view"
    assert max(views.values()) <= MAX_VIEWS_PER_HOST, views
    # Reply copies are the page and a line: views of two pages teach their parameter, and
    # a print view's one value is learned as itself (crawlproj/pipelines/noise_evidence.py).
    for host in ("blog.test", "plain.test"):
        assert f"Learned noise parameter 'replytocom' of {host}" in result.log
    learned = [line for line in result.log.splitlines() if "Learned noise" in line]
    assert any("'print" in line and "of wiki.test" in line for line in learned), learned


def test_two_workers_close_alternate_views(
    tmp_path: Path, redis_url: str, redis_client: Any
) -> None:
    """A copy's links are new to a worker that did not parse its page: the crawl's
    URL-seen, not the worker's recent links, says whether a copy lists items of its own
    (frontier/settled_acks.py). 5-14 views a host measured (17-21 before views taught)."""
    spec = views_web(latency_ms=LATENCY_MS)
    web, requests = crawl_with_workers(spec, tmp_path, redis_url, "views")
    views = Counter(r["host"] for r in requests if web.site.kind(r["url"]) == "alternate")
    assert max(views.values()) <= MAX_VIEWS_PER_HOST, views


def test_views_of_numbered_slugs_are_judged_with_their_siblings(tmp_path: Path) -> None:
    shop = HostSpec("shop.test", pages=20, shop_categories=4, shop_products=12)
    shop.facet_variants = ["slugs"]
    shop.alternates = ["replytocom"]
    spec = WebSpec(hosts=[shop], seed=31, base_ip="127.0.58.11", trap_prose=80)
    web, _, requests = crawl_to_its_end(spec, tmp_path)
    views = [r["path"] for r in requests if web.site.kind(r["url"]) == "alternate"]
    assert len(views) <= MAX_SLUG_SHOP_VIEWS, views
