"""The generic `web` spider: seeds -> follow links -> one PageItem per fetched document.

Checkpoint before parsing: each callback yields the page's item, waits until
the content pipelines have stored its body (crawlproj/checkpoint.py), and only
then yields the page's links. If the body cannot be stored the page goes back
to the frontier (``frontier_release``) and no link is followed, so a crash or
a dead page store never leaves a page whose links were crawled but whose body
is lost.

After the checkpoint, ``parse`` leaves the page's outcome for the frontier in
``response.meta["frontier_outcome"]`` (its URL pattern's score learns from it):
"new" (a 2xx of unique content), "duplicate" (an exact or near duplicate, a copy of
another page's template: the content pipeline's TEMPLATE_COPY_META, or a page whose
declared canonical names the listing it filters or sorts), "copy"
(a duplicate of a page of its own URL pattern: that page was no new content either;
a template copy of a page with the same path pattern on another host is one too: one
site's software serving two hosts, whose first page on this host was the template),
"soft_404", "unchanged" (a re-crawl found the same copy: same body or main
text, or a 304), or "sprawl" (new content whose links of its own shape were all new:
a generator's page, admission/sprawl.py; "sprawl_chain" when a chain of them led to it;
the frontier settles it as "new" where another page linked one of them). Other statuses,
released pages and probes carry none: the frontier sees the status itself.

Links not followed: a page that says nofollow, is not HTML, is a re-crawl's
unchanged copy or gone, a soft-404 (``soft_404``), or an exact duplicate (its
original's links are the same; a near duplicate's may differ, so they are
followed). A link scrapy.Request refuses costs only itself.

Soft-404 probes: when the soft-404 pipeline claimed a page's origin, the
spider sends that origin's probe (a random path, ``parse_probe``, first in its
IP's queue); its answer goes to the soft-404 checker and yields nothing.

``parse_page`` and ``follow_links`` (page_parse.py) are the extraction path; ``scrapy
replay`` runs the same two functions over stored bodies.

Stats: crawlproj/pages/<unchanged|gone|soft_404|exact_duplicate>_links_skipped,
crawlproj/pages/sprawl_candidate, crawlproj/pages/facet_sidebar (and links/facet_sidebar:
links marked), crawlproj/pages/<not_html|nofollow|released>, crawlproj/links/skipped/invalid,
crawlproj/soft404/probes_sent, crawlproj/soft404/probes_failed,
crawlproj/errors/<failure type>, crawlproj/sitemaps/<urls|invalid>.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.http import Response

from crawlproj.checkpoint import Checkpoint, CheckpointTimeout, checkpoint_for
from crawlproj.directives import declares_variant
from crawlproj.extractors import registry
from crawlproj.feeds import add_default_feed
from crawlproj.items import PageItem, is_exact_duplicate
from crawlproj.page_tokens import PageTokenConfig
from crawlproj.pipelines.content import TEMPLATE_COPY_META
from crawlproj.pipelines.soft404 import Soft404Checker, soft404_checker
from crawlproj.response_headers import content_type, header, parse_headers
from crawlproj.seeds import SeedLine, read_seed_arg
from crawlproj.spiders.link_marks import LinkMarks
from crawlproj.spiders.page_parse import follow_links, parse_page
from extensions.admission.facet_sidebar import SIDEBAR, SidebarConfig, sidebar_links
from extensions.admission.new_items import COPY_OUTCOMES, NEW_ITEMS, listed_items, listing
from extensions.admission.patterns import pattern_path, url_patterns
from extensions.admission.recent import count_repeat, recent_links_of
from extensions.admission.records import CANONICAL_META
from extensions.admission.sprawl import (
    SPRAWL,
    SPRAWL_GEN_META,
    SitePages,
    SprawlConfig,
    judge,
    log_chain_end,
)
from extensions.config import read
from extensions.content.soft404 import SECOND_PROBE_META, SEND_PROBE_META, probe_url
from extensions.content.template import blames
from extensions.pagestore.protocol import StoreUnavailable
from extensions.robots.cache import parse_sitemap

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from extensions.admission.admit import Admission

logger = logging.getLogger(__name__)


class WebSpider(scrapy.Spider):
    """Crawl outward from the seeds; the scheduler decides what is fetched when.

    Usage: scrapy crawl web -a seeds=FILE | -a seeds=URL1,URL2 [-O items.jsonl]
    Without seeds it resumes what the frontier (Redis, CRAWL_DATA_DIR) already holds.
    """

    name = "web"
    checkpoint: Checkpoint  # set in from_crawler
    soft404: Soft404Checker | None  # set in from_crawler; None: SOFT404_ENABLED is off
    page_tokens: PageTokenConfig | None  # set in from_crawler; None: URL_STRIP_PAGE_TOKENS off
    sprawl: SprawlConfig  # set in from_crawler (PRIORITY_SPRAWL_*)
    site_pages: SitePages  # set in from_crawler: pages judged per site, for chain ends
    facet_sidebar: SidebarConfig  # set in from_crawler (PRIORITY_FACET_SIDEBAR_NAMES)
    new_items: int  # set in from_crawler (PRIORITY_NEW_ITEMS)

    def __init__(self, seeds: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Read and validated up front: a bad seeds argument stops the crawl before
        # any component opens (the crawl command turns SeedError into one line).
        # No argument at all resumes the frontier: seeds added by `scrapy seed`, or a
        # crawl that was stopped, re-crawled or killed.
        self.seed_lines: list[SeedLine] = read_seed_arg(seeds) if seeds is not None else []
        # Path bases whose filters a page's sidebar showed (facet_sidebar.sidebar_links).
        self.proven_runs: dict[str, bool] = {}

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        add_default_feed(settings)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> WebSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        registry.load(crawler.settings.getlist("EXTRACTOR_MODULES"))
        spider.checkpoint = checkpoint_for(crawler)
        spider.soft404 = soft404_checker(crawler)
        spider.page_tokens = PageTokenConfig.from_settings(crawler.settings)
        spider.sprawl = read(SPRAWL, crawler.settings)
        spider.site_pages = SitePages()
        spider.facet_sidebar = read(SIDEBAR, crawler.settings)
        spider.new_items = read(NEW_ITEMS, crawler.settings).least
        return spider

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for seed in self.seed_lines:
            yield scrapy.Request(seed.url, callback=self.parse, errback=self.on_error)

    async def parse(self, response: Response) -> AsyncIterator[PageItem | scrapy.Request]:
        if response.status == 304:
            # A re-crawl's conditional GET found our copy current: a row, no body or links.
            async for row in self.bodiless_row(response):
                yield row
            if not response.meta.get("frontier_release"):
                response.meta["frontier_outcome"] = "unchanged"
            return
        page = parse_page(response, self.robots_token, self.crawler.stats)
        item = self.page_item(response)
        item.update(page.fields)
        self.checkpoint.register(item, response)
        yield item
        passed = await self.passed_checkpoint(item, response)
        if response.meta.get(SEND_PROBE_META):
            # Sent even when the page is handed back: its origin is claimed either way.
            yield self.probe(response)
        if not passed:
            return
        outcome = frontier_outcome(item, response.meta)
        if outcome is not None:
            response.meta["frontier_outcome"] = outcome
        if self.links_skipped(item):
            return
        links = follow_links(page, response, self.crawler.stats, self.page_tokens)
        fresh, own, generation = self.fresh_links(links, response, outcome)
        sidebar = self.sidebar_links(response.url, links)
        # A page whose verdict waits on its marked links (sprawl, a listing copy) marks
        # them with its lease; a chain's page that stays "new" only with its generation.
        waits = response.meta.get("frontier_outcome") != "new"
        lease = response.meta.get("frontier_lease") if waits else None
        marks = LinkMarks(own, sidebar, lease, generation)
        for url in fresh:
            request = self.link_request(url, meta=marks.meta(url))
            if request is not None:
                yield request

    def sidebar_links(self, page_url: str, links: list[str]) -> dict[str, str]:
        """The page's facet sidebar links (admission/facet_sidebar.py), counted."""
        sidebar = sidebar_links(page_url, links, self.facet_sidebar, self.proven_runs)
        if sidebar:
            self.crawler.stats.inc_value("crawlproj/pages/facet_sidebar")
            self.crawler.stats.inc_value("crawlproj/links/facet_sidebar", len(sidebar))
        return sidebar

    def fresh_links(
        self, links: list[str], response: Response, outcome: str | None
    ) -> tuple[list[str], frozenset[str], int | None]:
        """The links to request (not those this worker queued lately: no Request,
        middlewares or scheduling), those to mark (with the page's lease where its verdict
        waits on them: a sprawl page's, admission/sprawl.py; a near copy's items, listed),
        and the generation a sprawl chain's marked links carry (None: no chain)."""
        recent = recent_links_of(self.crawler)
        if recent is None:
            return links, frozenset(), None
        split = recent.split(links, response.url)
        count_repeat(self.crawler.stats, len(links) - len(split.request))
        if outcome in COPY_OUTCOMES:
            items = self.listed(response, split.new, recent.admission, outcome)
            return split.request, items, None
        if outcome != "new" or "frontier_lease" not in response.meta:
            return split.request, frozenset(), None
        parent = response.meta.get(SPRAWL_GEN_META)
        pages = self.site_pages.count(response.url)
        verdict = judge(
            response.url, split.new, split.known, self.sprawl, recent.relinked, parent, pages
        )
        if verdict is None:
            return split.request, frozenset(), None
        if verdict.outcome is not None:
            response.meta["frontier_outcome"] = verdict.outcome
            self.crawler.stats.inc_value("crawlproj/pages/sprawl_candidate")
        if not verdict.dropped:
            return split.request, frozenset(verdict.marked), verdict.generation
        # A chain's end: what its pages link is more of the same (admission/sprawl.py).
        dropped = set(verdict.dropped)
        self.crawler.stats.inc_value("crawlproj/pages/sprawl_chain_end")
        self.crawler.stats.inc_value("crawlproj/links/dropped/sprawl_chain", len(dropped))
        log_chain_end(response.url, len(dropped))
        return [url for url in split.request if url not in dropped], frozenset(), None

    def listed(
        self, response: Response, new: list[str], admission: Admission, outcome: str
    ) -> frozenset[str]:
        """A near copy's items (admission/new_items.py: a listing's next page), to be
        marked with its lease: its outcome waits on them (new_items.listing, settled by
        the crawl's URL-seen); "new" at once where no lease carries the wait."""
        items = listed_items(response.url, new, self.new_items, admission.may_admit)
        if not items:
            return frozenset()
        self.crawler.stats.inc_value("crawlproj/pages/near_copy_with_new_items")
        if "frontier_lease" not in response.meta:
            response.meta["frontier_outcome"] = "new"
            return frozenset()
        response.meta["frontier_outcome"] = listing(outcome)
        return frozenset(items)

    def links_skipped(self, item: PageItem) -> bool:
        """True (counted) for a page whose links are not to be followed."""
        if item.get("change") in ("unchanged", "gone"):
            # A re-crawl found the same page (its links were followed last time), or
            # the page is gone.
            reason = str(item["change"])
        elif item.get("soft_404"):
            reason = "soft_404"  # the host's not-found answer: its links lead nowhere real
        elif is_exact_duplicate(item):
            reason = "exact_duplicate"  # the original's links are these links
        else:
            return False
        self.crawler.stats.inc_value(f"crawlproj/pages/{reason}_links_skipped")
        return True

    def link_request(
        self, url: str, callback: Any = None, meta: dict[str, Any] | None = None
    ) -> scrapy.Request | None:
        """The request for one followed link (or sitemap URL); None (counted) when scrapy
        refuses the URL, so the page's other links still follow."""
        try:
            return scrapy.Request(
                url, callback=callback or self.parse, errback=self.on_error, meta=meta
            )
        except ValueError:
            self.crawler.stats.inc_value("crawlproj/links/skipped/invalid")
            return None

    def probe(self, response: Response, second: bool = False) -> scrapy.Request:
        """The soft-404 probe of the response's origin: dont_filter (it is asked once
        per origin, by the claim; a second time when the first answer was a soft one
        with text), first in its IP's queue so later pages are compared."""
        self.crawler.stats.inc_value("crawlproj/soft404/probes_sent")
        meta: dict[str, Any] = {"frontier_priority": 0}
        if second:
            meta[SECOND_PROBE_META] = True
        return scrapy.Request(
            probe_url(response.url),
            callback=self.parse_probe,
            errback=self.on_probe_error,
            dont_filter=True,
            meta=meta,
        )

    async def parse_probe(self, response: Response) -> AsyncIterator[scrapy.Request]:
        """A probe's answer settles its origin; no row, no links (the crawler's own
        question, not a page of the site: crawlproj/pipelines/soft404.py). A first
        answer that was soft asks for the second probe."""
        if self.soft404 is not None and await self.soft404.probe_answer(response):
            yield self.probe(response, second=True)

    async def bodiless_row(self, response: Response) -> AsyncIterator[PageItem]:
        item = self.page_item(response)
        self.checkpoint.register(item, response)
        yield item
        await self.passed_checkpoint(item, response)

    async def parse_sitemap(self, response: Response) -> AsyncIterator[PageItem | scrapy.Request]:
        """Sitemaps (from robots.txt): their page URLs and nested sitemaps enter the
        frontier scored as sitemap URLs (the source middleware says so: the prioritizer
        puts them with the seeds, ahead of deep links); <lastmod> rides along in meta (the
        scheduler makes a stored URL due when its lastmod is newer than our copy)."""
        if response.status == 304:  # a re-crawled sitemap that did not change
            async for row in self.bodiless_row(response):
                yield row
            return
        item = self.page_item(response)
        item.update(parse_page(response, self.robots_token, self.crawler.stats).fields)
        self.checkpoint.register(item, response)
        yield item
        if not await self.passed_checkpoint(item, response):
            return
        try:
            pages, nested = parse_sitemap(response.body, response.url)
        except ValueError as exc:  # too large, corrupt gzip, not a sitemap
            self.logger.warning("Sitemap %s skipped: %s", response.url, exc)
            self.crawler.stats.inc_value("crawlproj/sitemaps/invalid")
            return
        for url in nested:
            if (nested_request := self.link_request(url, self.parse_sitemap)) is not None:
                yield nested_request
        for url, lastmod in pages:
            request = self.link_request(url, meta={"lastmod": lastmod} if lastmod else None)
            if request is not None:
                yield request
        self.crawler.stats.inc_value("crawlproj/sitemaps/urls", len(pages))

    async def passed_checkpoint(self, item: PageItem, response: Response) -> bool:
        """True once the body is stored (or needs no storing); False hands the page back."""
        try:
            await self.checkpoint.wait(item)
        except (StoreUnavailable, CheckpointTimeout) as exc:
            if isinstance(exc, CheckpointTimeout):
                self.logger.warning("Page %s handed back: %s", response.url, exc)
            # The frontier re-delivers a released page later instead of acking it.
            response.meta["frontier_release"] = True
            self.crawler.stats.inc_value("crawlproj/pages/released")
            return False
        return True

    @property
    def robots_token(self) -> str:
        return self.crawler.settings.get("ROBOTS_USER_AGENT") or "crawlproj"

    def page_item(self, response: Response) -> PageItem:
        redirects = response.meta.get("redirect_urls") or []
        # The document's URL: its chain's first, or its canonical URL where the request
        # went out with a session token in its path (admit.py).
        url = redirects[0] if redirects else response.meta.get(CANONICAL_META) or response.url
        return PageItem(
            url=url,
            final_url=response.url,
            status=response.status,
            fetched_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
            depth=response.meta.get("depth", 0),
            ip=str(response.ip_address) if response.ip_address else None,
            content_type=content_type(response),
            length=len(response.body),
            etag=header(response, b"ETag"),
            last_modified=header(response, b"Last-Modified"),
            headers=parse_headers(response),
        )

    def on_error(self, failure: Any) -> None:
        # Counted by cause; the request itself is logged by Scrapy's core.
        self.crawler.stats.inc_value(f"crawlproj/errors/{failure.type.__name__}")

    def on_probe_error(self, failure: Any) -> None:
        # The origin stays claimed: its pages go unchecked (soft404_states.py).
        self.crawler.stats.inc_value("crawlproj/soft404/probes_failed")
        self.on_error(failure)


def frontier_outcome(item: PageItem, meta: dict[str, Any] | None = None) -> str | None:
    """What the page turned out to be, for the frontier (see the module docstring);
    a copy of another page's template is a duplicate too."""
    if item.get("soft_404"):
        return "soft_404"
    if item.get("change") == "unchanged":
        return "unchanged"
    exact = item.get("duplicate_of")
    original = exact or (meta or {}).get(TEMPLATE_COPY_META)
    if original:
        # Neutral when the first copy was a longer spelling of this URL (blames).
        url = item.get("url")
        if not url:
            return "duplicate"
        if not blames(url, original):
            return None
        mine, theirs = url_patterns(url).fine, url_patterns(original).fine
        if mine == theirs or (not exact and pattern_path(mine) == pattern_path(theirs)):
            return "copy"
        return "duplicate"
    status = item.get("status") or 0
    if not 200 <= status < 300:
        return None
    # A filter, sort or session page that names its listing as canonical is a variant of
    # it, however new its content (directives.declares_variant).
    if declares_variant(item.get("url") or "", item.get("canonical")):
        return "duplicate"
    return "new"
