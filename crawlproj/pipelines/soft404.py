"""Soft-404s: each origin probed once, and pages near its not-found answer marked.

Soft404Pipeline sits between the duplicate check and the page store: the store
skips a row whose ``soft_404`` is true, and the spider follows none of its
links. Per 200 HTML page, by the state of its (final URL's) origin, shared by
every worker (extensions/content/soft404_states.py):

- nobody claimed it: this worker claims it with the page's words as the
  reference, and when the claim is won the spider sends the origin's probe
  (response.meta SEND_PROBE_META); the page itself goes unchecked. Unless the
  page is a duplicate or a template copy of another page: then the claim waits
  for the origin's first page of its own (a wildcard-DNS trap's made-up hosts,
  a mirror, serve nothing but copies, and a probe each doubled their cost);
- claimed, the probe not answered yet: unchecked (``soft_404`` None);
- honest (the probe got a non-200): ``soft_404`` false;
- soft: compared with the answer (extensions/content/soft404.py ``judge``).

The probe's answer reaches the spider's ``parse_probe``, which hands it to
the same Soft404Checker: a 200 settles the origin as soft with the answer's
fingerprint, any other status as honest. A soft answer with text asks for a second
probe (SECOND_PROBE_META), whose answer gives the print its template: the phrases
both answers share (extensions/content/soft404.py, the template rule). A probe has no row: it is the
crawler's own question, not a page of the site, and a row would enter the
duplicate index (its answer, often the home page, would become the original
of the site's own copy, with no stored body) and the re-crawl schedule.

The text work (parse, main text) and Redis run in a small thread pool: never on
the reactor. Losing the check costs a stored body, not data: on a Redis error
the page counts as not compared.

Stats: content/soft404/probes (probe answers), content/soft404/hosts_with_soft404
(probes answered 200), content/soft404/detected, content/soft404/checked (compared,
not a soft-404), content/soft404/honest (page of an honest origin),
content/soft404/claimed (this page's origin is to be probed),
content/soft404/unchecked (its probe has not answered), content/soft404/deferred (a
copy did not claim its unclaimed origin), content/soft404/second_probes (second
answers), content/soft404/templates (of them, those that gave a template),
content/soft404/redis_error.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError
from scrapy.exceptions import NotConfigured
from scrapy.http import TextResponse

from crawlproj.checkpoint import checkpoint_for
from crawlproj.items import PageItem
from crawlproj.pipelines.content import TEMPLATE_COPY_META
from crawlproj.pipelines.signature import response_page_text
from extensions.config import Setting, Table, between, read
from extensions.content.fingerprint import content_hash
from extensions.content.soft404 import (
    MIN_TEMPLATE_PHRASES,
    SECOND_PROBE_META,
    SEND_PROBE_META,
    NotFoundPrint,
    Phrases,
    Words,
    judge,
    learn,
    learn_second,
    origin_of,
    reference,
    text_phrases,
    text_words,
)
from extensions.content.soft404_states import CLAIMED, HONEST, SOFT, OriginState, OriginStates
from extensions.pagestore.protocol import is_html_type
from extensions.state.connection import RedisUnavailable, redis_for
from extensions.state.keys import FrontierKeys

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

# Text work only for pages of origins that answer 200 (and once per origin): two
# threads keep it off the reactor without competing with the duplicate check's pool.
THREADS = 2


@dataclass(frozen=True)
class Soft404Config:
    enabled: bool
    min_resemblance: float
    min_containment: float


SOFT404 = Table(
    Soft404Config,
    Setting("SOFT404_ENABLED", "enabled", bool),
    Setting("SOFT404_MIN_RESEMBLANCE", "min_resemblance", float, between(0.1, 1.0)),
    Setting("SOFT404_MIN_CONTAINMENT", "min_containment", float, between(0.1, 1.0)),
)


@dataclass(frozen=True)
class Check:
    """What the checker found for one page or probe answer."""

    branches: tuple[str, ...]  # counted as content/soft404/<branch>
    soft_404: bool | None = None
    send_probe: bool = False


class Soft404Checker:
    """The soft-404 work of one crawl: the pipeline's pages, the spider's probe answers."""

    def __init__(self, crawler: Crawler, config: Soft404Config) -> None:
        # crawler.stats is read when counting: the spider makes this checker before the
        # crawl has a stats collector.
        self.crawler = crawler
        self.config = config
        self.pool = ThreadPoolExecutor(THREADS, thread_name_prefix="soft404")
        self.states: OriginStates | None = None  # None: not open, or no Redis

    def open(self) -> None:
        assert self.crawler.spider is not None
        crawl = self.crawler.settings.get("FRONTIER_CRAWL_NAME") or self.crawler.spider.name
        try:
            redis = redis_for(self.crawler)
        except RedisUnavailable as exc:
            # The frontier closes the crawl for the same reason.
            logger.error("Soft-404 checks off: %s", exc)
            return
        self.states = OriginStates(redis, FrontierKeys(crawl).soft404)

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    async def page(self, item: PageItem, response: Response) -> None:
        """Set the row's soft_404; ask the spider for a probe when this page claimed
        its origin."""
        if self.states is None or not _comparable(response, item.get("content_type")):
            return
        duplicate = bool(item.get("duplicate_of"))
        copy = duplicate or bool(response.meta.get(TEMPLATE_COPY_META))
        body_hash = item.get("content_hash") or ""
        check = await self._run(self._judge, response, item["url"], copy, duplicate, body_hash)
        item["soft_404"] = check.soft_404
        if check.send_probe:
            response.meta[SEND_PROBE_META] = True

    async def probe_answer(self, response: Response) -> bool:
        """Settle the probed origin from its answer; True: send its second probe."""
        if self.states is None:
            return False
        probed = (response.meta.get("redirect_urls") or [response.url])[0]
        second = bool(response.meta.get(SECOND_PROBE_META))
        check = await self._run(self._learn_second if second else self._learn, response, probed)
        return check.send_probe

    async def _run(self, work: Callable[..., Check], *args: Any) -> Check:
        loop = asyncio.get_running_loop()
        check: Check = await loop.run_in_executor(self.pool, self._guarded, work, *args)
        for branch in check.branches:
            self.crawler.stats.inc_value(f"content/soft404/{branch}")
        return check

    # ---- worker thread -------------------------------------------------------------

    def _guarded(
        self, work: Callable[..., Check], response: Response, url: str, *args: Any
    ) -> Check:
        try:
            return work(response, url, *args)
        except RedisError as exc:
            logger.warning("Soft-404 check skipped for %s: Redis error %s", url, exc)
            return Check(("redis_error",))

    def _learn(self, response: Response, probed: str) -> Check:
        """A probe's answer settles its origin (probed: the probe URL, before redirects)."""
        assert self.states is not None
        origin = origin_of(probed)
        if response.status != 200:
            self.states.settle(origin, OriginState(HONEST))
            return Check(("probes",))
        final = response.url if response.url != probed else ""
        text = isinstance(response, TextResponse) and not final
        said_text = page_text_of(response) if text else ""  # extracted once
        answer: Words = text_words(said_text, probed) if text else frozenset()
        body_hash = content_hash(response.body) if text and response.body else ""
        # The claim holds the reference; a probe delivered again after it was settled
        # finds none, and keeps the redirect rule only.
        claim = self.states.read(origin)
        claimed = claim is not None and claim.kind == CLAIMED
        reference = claim.reference if claim is not None and claimed else None
        said: Phrases = text_phrases(said_text, probed) if text else ()
        furniture: Phrases = claim.reference_phrases if claim is not None and claimed else ()
        print_ = learn(answer, reference, final, body_hash, (said, furniture))
        self.states.settle(origin, OriginState(SOFT, print=print_))
        logger.debug("Soft-404s on %s: the probe %s answered 200", origin, probed)
        second = len(print_.pending) >= MIN_TEMPLATE_PHRASES
        return Check(("probes", "hosts_with_soft404"), send_probe=second)

    def _learn_second(self, response: Response, probed: str) -> Check:
        """The second probe's answer gives the origin's print its template."""
        assert self.states is not None
        origin = origin_of(probed)
        state = self.states.read(origin)
        if state is None or state.print is None or not state.print.pending:
            return Check(("second_probes",))
        text = response.status == 200 and isinstance(response, TextResponse)
        said: Phrases = text_phrases(page_text_of(response), probed) if text else ()
        print_: NotFoundPrint = learn_second(state.print, said)
        self.states.settle(origin, OriginState(SOFT, print=print_))
        return Check(("second_probes", "templates") if print_.by_template else ("second_probes",))

    def _judge(
        self, response: Response, url: str, copy: bool, duplicate: bool, body_hash: str
    ) -> Check:
        """A 200 HTML page (url: as requested, before redirects; copy: a duplicate or a
        template copy of another page; body_hash: its content_hash, the content
        pipeline's)."""
        assert self.states is not None and isinstance(response, TextResponse)
        origin = origin_of(response.url)
        state = self.states.get(origin)
        if state is None:
            if copy:
                return Check(("deferred",))
            # The duplicate check (an earlier pipeline) extracted this page's main text.
            main = response_page_text(response).text
            words, phrases = reference(main, response.text, response.url)
            won = self.states.claim(origin, words, phrases)
            return Check(("claimed",) if won else ("unchecked",), send_probe=won)
        if state.kind == CLAIMED:
            return Check(("unchecked",))
        if state.print is None:
            return Check(("honest",), soft_404=False)
        fingerprint, threshold = state.print, self.config.min_resemblance
        # The duplicate check (an earlier pipeline) extracted this page's main text.
        text = response_page_text(response).text
        words = text_words(text, url) if fingerprint.by_text else frozenset()
        own = frozenset(text_phrases(text, url)) if fingerprint.by_template else frozenset()
        soft = judge(
            fingerprint, words, url, response.url, threshold, duplicate, body_hash,
            (own, self.config.min_containment),
        )  # fmt: skip
        return Check(("detected",) if soft else ("checked",), soft_404=soft)


def page_text_of(response: Response) -> str:
    """The main text of a probe's answer (TextResponse): what its phrases are made of."""
    assert isinstance(response, TextResponse)
    return response_page_text(response).text


def _comparable(response: Response, content_type: str | None) -> bool:
    """A page worth comparing: a 200 whose body is HTML text."""
    return (
        response.status == 200 and isinstance(response, TextResponse) and is_html_type(content_type)
    )


_checkers: weakref.WeakKeyDictionary[Any, Soft404Checker | None] = weakref.WeakKeyDictionary()


def soft404_checker(crawler: Crawler) -> Soft404Checker | None:
    """The one checker of this crawler (None when SOFT404_ENABLED is off); ValueError
    names a bad setting."""
    if crawler not in _checkers:
        config = read(SOFT404, crawler.settings)
        _checkers[crawler] = Soft404Checker(crawler, config) if config.enabled else None
    return _checkers[crawler]


class Soft404Pipeline:
    """Sets soft_404 on every row it can compare (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        checker = soft404_checker(crawler)
        if checker is None:
            raise NotConfigured("SOFT404_ENABLED is off")
        self.checker = checker
        self.checkpoint = checkpoint_for(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Soft404Pipeline:
        return cls(crawler)

    async def open_spider(self) -> None:
        self.checker.open()

    async def close_spider(self) -> None:
        self.checker.close()

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, PageItem):
            response = self.checkpoint.response(item)
            if response is not None:
                await self.checker.page(item, response)
        return item
