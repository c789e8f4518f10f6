"""Alternate views of every real page (scripts/testweb/alternates.py): a blog's
`?replytocom=<comment>` copies, print views, share buttons, a wiki's edit and history tabs
beside real pages that link files (an image, a PDF, a zip) and a calendar. The views are
copies of their page; trap feedback closes each view's pattern after a few, whatever the
page's other links, and every real page is still reached."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from scripts.testweb import HostSpec, WebSpec
from tests.integration.test_crawl_budget import crawl_to_its_end

STYLES = ["replytocom", "print", "share", "history"]
# Views a host of 40-70 real pages costs: a few per view and page template (the home
# page, /page/N, each guide level), 6-17 a host measured. Before links the admission
# refuses (the page's files, its closed calendar) stopped counting as a copy's new items,
# the blog's reply copies were "listings with items of their own": 235 views.
MAX_VIEWS_PER_HOST = 40


def views_web() -> WebSpec:
    blog = HostSpec("blog.test", pages=40, guide=[3, 4], attachments=True, alternates=STYLES)
    blog.calendars = ["archive"]
    wiki = HostSpec("wiki.test", pages=50, sources=True, alternates=["history", "print"])
    wiki.attachments = True
    plain = HostSpec("plain.test", pages=60, alternates=["replytocom", "share"])
    return WebSpec(hosts=[blog, wiki, plain], seed=23, base_ip="127.0.58.1")


def test_alternate_views_close_and_every_real_page_is_reached(tmp_path: Path) -> None:
    web, _, requests = crawl_to_its_end(views_web(), tmp_path)  # reaches every real page
    views = Counter(r["host"] for r in requests if web.site.kind(r["url"]) == "alternate")
    assert views, "the web serves no alternate view"
    assert max(views.values()) <= MAX_VIEWS_PER_HOST, views
