"""ContentDedupPipeline: exact and near-duplicate detection, shared by all workers.

Per page: content_hash (sha256 of the whitespace-normalised body), and from
the page's main text (extensions/content/main_text.py) its text_hash, a
64-bit simhash of its 3-word shingles and a MinHash sketch of its 5-word
shingles (extensions/content/fingerprint.py). A content hash seen before
(Redis hash content hash -> URL) is an exact duplicate; otherwise the simhash
index proposes pages within NEARDUP_MAX_DISTANCE bits and the one whose sketch
confirms an estimated resemblance >= NEARDUP_MIN_RESEMBLANCE is the original
(SimhashIndex.check_and_add, atomic across workers): a page is never dropped
on its simhash alone. A duplicate's row gets ``duplicate_of``, the URL of the
page whose stored body stands for it (a near duplicate's hash maps to its
original, so duplicate_of never points at another duplicate), and the page
store skips its body. The content hash is recorded for every page.

A re-fetch of a stored URL is judged against the stored copy instead, and by
another rule: unchanged when the body or the main text is identical
(text_hash), changed otherwise, however close the simhash (one new sentence
is an edit worth storing; a new ad outside the main text is not).

The work (parse, fingerprint, three Redis round trips for a new page: the content
hash's lookup with the simhash probe, the index's commit, both first writers; one
more when the index has candidates to verify) runs in a small thread pool: never on
the reactor.

Stats: content/unique, content/unique_short (under NEARDUP_MIN_WORDS: exact
check only), content/unique_no_text, content/exact_duplicate,
content/near_duplicate, content/unchanged, content/empty, content/unchecked
(no Redis at open), content/redis_error, content/no_body,
content/not_modified, content/gone; content/text/<main|visible|none|stored>: which
extraction the fingerprint used (stored: none, the body is the stored copy's);
content/template_copy: a new page whose main text repeats another page's but for
numbers and its own URL's words (a calendar day, an echoed query:
extensions/content/template.py), a duplicate for trap feedback only;
content/noise_params_learned: a query parameter that duplicates showed to be noise
(extensions/admission/noise.py); content/noise_evidence_view: a duplicate whose URL adds
parameters to its original's, counted as evidence (noise_evidence.py);
content/noise_evidence_too_far: a duplicate too far from its original to teach one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from crawlproj.checkpoint import checkpoint_for
from crawlproj.items import PageItem
from crawlproj.pipelines.noise_evidence import NoiseTeacher
from crawlproj.pipelines.recrawl import PREV_STATE_META
from crawlproj.pipelines.signature import Signature, content_signature, stored_signature
from extensions.admission.noise import NoiseConfig, noise_config, noise_learned
from extensions.content.fingerprint import content_hash, hamming
from extensions.content.neardup_config import NeardupConfig
from extensions.content.simhash_index import SimhashIndex
from extensions.content.simhash_keys import crawl_index_shards
from extensions.state.connection import RedisUnavailable, redis_for
from extensions.state.keys import FrontierKeys
from extensions.state.page_hashes import PageHash

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from extensions.recrawl.state import DocState

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Verdict:
    """What the content check decided for one page."""

    branch: str  # the stats branch (content/<branch>)
    duplicate_of: str | None = None
    distance: int | None = None  # simhash bits to the original / stored copy
    resemblance: float | None = None
    # The first page with this one's template (trap feedback counts it as a duplicate).
    template_of: str | None = None
    # (host, parameter) pairs this page made noise (admission/noise.py).
    noise: tuple[tuple[str, str], ...] = ()


# Response meta the spider reads for the page's outcome (crawlproj/spiders/web.py).
TEMPLATE_COPY_META = "content_template_copy"


class ContentDedupPipeline:
    """Sets the content fields and duplicate_of; counts every branch under content/."""

    def __init__(self, crawler: Crawler, config: NeardupConfig, noise: NoiseConfig) -> None:
        self.crawler = crawler
        self.noise_config = noise
        self.stats = crawler.stats
        self.config = config
        self.checkpoint = checkpoint_for(crawler)
        self.pool = ThreadPoolExecutor(config.threads, thread_name_prefix="neardup")
        self.index: SimhashIndex | None = None
        self.hashes: PageHash | None = None
        self.templates: PageHash | None = None
        self.noise: NoiseTeacher | None = None
        self.redis: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentDedupPipeline:
        settings = crawler.settings
        return cls(crawler, NeardupConfig.from_settings(settings), noise_config(settings))

    async def open_spider(self) -> None:
        assert self.crawler.spider is not None
        crawl = self.crawler.settings.get("FRONTIER_CRAWL_NAME") or self.crawler.spider.name
        keys = FrontierKeys(crawl)
        try:
            self.redis = redis_for(self.crawler)
        except RedisUnavailable as exc:
            # The frontier closes the crawl for the same reason; rows still get hashes.
            logger.error("Duplicate checks off: %s", exc)
            return
        # Per page: in the page shard of the content hash / template digest.
        self.hashes = PageHash(self.redis, crawl, lambda pages: pages.content_hashes)
        self.templates = PageHash(self.redis, crawl, lambda pages: pages.page_templates)
        self.noise = NoiseTeacher(
            self.redis, keys.noise_counts, keys.noise_params, self.noise_config, self.stats
        )
        hashes = self.hashes  # its layout is the crawl's page shards, known on first use
        self.index = SimhashIndex(
            self.redis,
            keys.neardup,
            max_distance=self.config.max_distance,
            min_resemblance=self.config.min_resemblance,
            blocks=self.config.blocks,
            bucket_cap=self.config.bucket_cap,
            max_candidates=self.config.max_candidates,
            shards=lambda: crawl_index_shards(self.redis, hashes.layout()[0]),
        )

    async def close_spider(self) -> None:
        self.pool.shutdown(wait=True)
        index = self.index
        if index is not None:
            # Crawl-wide (all workers): buckets of templated sites that hit the cap.
            try:
                overflows = await asyncio.to_thread(lambda: index.bucket_overflows)
            except RedisError:
                return
            self.stats.set_value("neardup/bucket_overflows", overflows)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        response = self.checkpoint.response(item)
        if response is None:
            self.stats.inc_value("content/no_body")
            return item
        if item.get("change") in ("not_modified", "gone"):  # no body to look at
            self.stats.inc_value(f"content/{item['change']}")
            return item
        loop = asyncio.get_running_loop()
        url = item["url"]
        prev: DocState | None = response.meta.get(PREV_STATE_META)
        sig, verdict = await loop.run_in_executor(
            self.pool, self._classify, response, item.get("content_type"), url, prev
        )
        item["content_hash"] = sig.content_hash
        item["text_hash"] = sig.text.text_hash
        item["simhash"] = sig.text.simhash
        item["duplicate_of"] = verdict.duplicate_of
        item["simhash_distance"] = verdict.distance
        item["resemblance"] = verdict.resemblance
        if prev is not None and verdict.branch == "unchanged":
            item["change"] = "unchanged"
            item["content_ref"] = prev.content_ref or None
            item["duplicate_of"] = prev.duplicate_of or None
        elif PREV_STATE_META in response.meta:
            item["change"] = "changed" if prev is not None else "new"
        self.stats.inc_value(f"content/{verdict.branch}")
        self.stats.inc_value(f"content/text/{sig.text_source}")
        if verdict.template_of:
            response.meta[TEMPLATE_COPY_META] = verdict.template_of
            self.stats.inc_value("content/template_copy")
        for host, name in verdict.noise:  # on the reactor: signals are not thread-safe
            self.crawler.signals.send_catch_log(noise_learned, host=host, name=name)
        return item

    # ---- worker thread -------------------------------------------------------------

    def _classify(
        self, response: Response, content_type: str | None, url: str, prev: DocState | None
    ) -> tuple[Signature, Verdict]:
        """The signature of one page and what it is (see the module docstring)."""
        body_hash = content_hash(response.body) if response.body else None
        if prev is not None and body_hash is not None and body_hash == prev.content_hash:
            sig = stored_signature(body_hash, prev)  # the stored copy's: not extracted again
            return sig, self._against_stored(sig, prev)
        sig = content_signature(response, content_type, body_hash)
        stored = self._against_stored(sig, prev) if prev is not None else None
        if stored is not None and stored.branch == "unchanged":
            return sig, stored
        # A new page's template is looked up beside its content hash; a re-fetch has none.
        depth = int(response.meta.get("depth", 0)) if prev is None else None
        verdict = self._dedup(sig, url, depth)
        if stored is not None and verdict.distance is None:
            # A changed re-fetch that is nobody's duplicate: the distance to its old copy.
            verdict = Verdict(verdict.branch, distance=stored.distance)
        # What the duplicate's URL teaches about its parameters (noise_evidence.py): the
        # same text, or a view a URL adds to a page, several pages over.
        if verdict.duplicate_of and self.noise is not None:
            learned = self.noise.learn(url, verdict.duplicate_of, verdict.resemblance or 0.0)
            verdict = dataclasses.replace(verdict, noise=learned)
        return sig, verdict

    def _template_of(self, first: str, url: str, depth: int) -> str | None:
        """The first page with this page's template (`first`: the first writer's value,
        shared by all workers), unless that is this page or this page is no deeper:
        listed beside it (a manual's MSVC10, MSVC11 pages differ only in numbers), not
        a walk's step (a calendar's next month is one link deeper)."""
        depth_text, _, first_url = first.partition(" ")
        if not depth_text.isdigit():
            return first if first != url else None  # written before depths were kept
        if first_url == url:
            return None
        if depth <= int(depth_text):
            self.stats.inc_value("content/template_sibling")
            return None
        return first_url

    def _dedup(self, sig: Signature, url: str, depth: int | None) -> Verdict:
        """Exact, then near duplicate: the content hash's lookup with the simhash probe
        (one round trip), the index's verify and commit, then the first writers of the
        content hash and (a new page that is nobody's duplicate: `depth` given) of its
        template (one round trip). A copy that raced in from another worker has its
        template written too: harmless, as its verdict is a duplicate's."""
        if sig.content_hash is None:
            return Verdict("empty")
        if self.index is None or self.hashes is None:
            return Verdict("unchecked")
        try:
            verdict = self._lookup(sig, url)
            if verdict.branch == "exact_duplicate":
                return verdict
            template = sig.template if depth is not None and not verdict.duplicate_of else None
            original, first = self._first_writers(sig.content_hash, verdict, url, template, depth)
        except RedisError as exc:
            # Dedup is an optimisation: storing a duplicate costs space, losing a
            # body costs data. Without Redis the page counts as unique.
            logger.warning("Duplicate check skipped for %s: Redis error %s", url, exc)
            return Verdict("redis_error")
        if verdict.duplicate_of is None and original != url:
            # The same content reached another worker in between (pages outside
            # the simhash index: short, textless, or NEARDUP_ENABLED off).
            return Verdict("exact_duplicate", original, resemblance=1.0)
        if first is not None and depth is not None:
            template_of = self._template_of(first, url, depth)
            if template_of is not None:
                verdict = dataclasses.replace(verdict, template_of=template_of)
        return verdict

    def _lookup(self, sig: Signature, url: str) -> Verdict:
        """The content hash's first page and the simhash index's answer, one round trip."""
        assert self.hashes is not None and self.index is not None and sig.content_hash
        text, unprobed = sig.text, self._unprobed(sig)
        pipe = self.redis.pipeline(transaction=False)
        self.hashes.queue_get(pipe, sig.content_hash)
        if unprobed is None:
            assert text.simhash is not None
            self.index.queue_check(pipe, text.simhash)
        reply, *probed = pipe.execute()
        seen = self.hashes.got(sig.content_hash, reply)
        # A page handed back to the frontier (store down) and fetched again finds its
        # own URL: that is not a duplicate.
        if seen and seen != url:
            return Verdict("exact_duplicate", seen, resemblance=1.0)
        if unprobed is not None:
            return Verdict(unprobed)
        return self._near(sig, url, probed)

    def _first_writers(
        self, content: str, verdict: Verdict, url: str, template: str | None, depth: int | None
    ) -> tuple[str, str | None]:
        """The content hash goes to the page whose body stands for it (the page itself,
        or the stored original it near-duplicates), first writer wins: later exact
        copies then point straight at a stored body. The template goes to its first
        page. One round trip; (content hash's first writer, template's or None)."""
        assert self.hashes is not None
        templates = self.templates if template is not None else None
        pipe = self.redis.pipeline(transaction=False)
        self.hashes.queue_first_writer(pipe, content, verdict.duplicate_of or url)
        if templates is not None and template is not None:
            templates.queue_first_writer(pipe, template, f"{depth} {url}")
        replies = pipe.execute()
        original = self.hashes.first_written(content, replies[:2])
        if templates is None or template is None:
            return original, None
        return original, templates.first_written(template, replies[2:])

    @staticmethod
    def _against_stored(sig: Signature, prev: DocState) -> Verdict:
        """A re-fetch is unchanged when its body, or its main text, is the stored
        copy's; changed otherwise (however close the simhash). Copies stored
        before text hashes existed compare by body alone."""
        text, distance = sig.text, None
        if text.simhash is not None and prev.simhash:
            distance = hamming(text.simhash, int(prev.simhash, 16))
        same_body = sig.content_hash == (prev.content_hash or None)
        same_text = text.text_hash is not None and text.text_hash == (prev.text_hash or None)
        if same_body or same_text:
            return Verdict("unchanged", distance=distance)
        return Verdict("changed", distance=distance)

    def _unprobed(self, sig: Signature) -> str | None:
        """Why the simhash index is not asked about this page (its branch), or None."""
        text = sig.text
        if text.simhash is None or text.sketch is None:
            return "unique_no_text"
        if not self.config.enabled or text.words < self.config.min_words:
            return "unique_short"
        return None

    def _near(self, sig: Signature, url: str, probed: list[Any]) -> Verdict:
        """The simhash index's answer from its probe's replies (queue_check), the page
        added when it is nobody's near duplicate."""
        text = sig.text
        assert self.index is not None and text.simhash is not None and text.sketch is not None
        match = self.index.finish_check(text.simhash, text.sketch, url, probed)
        if match is not None and match.doc_id and match.doc_id != url:
            # The row says it too (duplicate_of, resemblance); the log line is for
            # whoever wonders why a page's body is not in the store.
            logger.debug(
                "Near duplicate: %s of %s (resemblance %.2f, %d bits)",
                url, match.doc_id, match.resemblance, match.distance,
            )  # fmt: skip
            return Verdict("near_duplicate", match.doc_id, match.distance, match.resemblance)
        return Verdict("unique")
