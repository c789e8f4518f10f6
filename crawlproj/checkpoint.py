"""Checkpoint before parsing: a page's links are extracted only once its body is stored.

The spider yields the page's item, then awaits ``checkpoint.wait(item)``. The
item travels through the content pipelines concurrently: Scrapy's scraper
(2.19, asyncio reactor) feeds the callback's async generator into a queue that
CONCURRENT_ITEMS workers drain (``_parallel_asyncio``), so the item reaches
the pipelines while the generator is suspended in ``wait`` (no deadlock). The
last content pipeline resolves the wait with an outcome ("stored",
"duplicate"...) or fails it with StoreUnavailable; the spider then yields the
links, or hands the page back to the frontier.

The response rides beside the item in this side registry, keyed by the item
object (weakly): a body is not a Field, so items stay small and JSON-exportable.

Every item ends in item_scraped, item_dropped or item_error; those signals
resolve a wait that no pipeline resolved (pipelines switched off, another
pipeline dropped the item), so a wait never outlives its item. A timeout
guards the one case signals cannot see: a pipeline that replaced the item
object with a copy.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class CheckpointTimeout(RuntimeError):
    """No pipeline finished the item in time (see module docstring)."""


@dataclass
class _Entry:
    response: Response
    future: asyncio.Future[str] | None = None


class Checkpoint:
    """Registry item -> (response, future) for one crawl."""

    def __init__(self, timeout: float = 300.0) -> None:
        self.timeout = timeout
        # Keyed by id(item), dropped when the item dies: a WeakKeyDictionary compares its
        # keys with ==, and an Item compares as a mapping (32 us a lookup, ~9 a page).
        self._entries: dict[int, _Entry] = {}

    def register(self, item: Any, response: Response) -> None:
        """Make the response findable by the pipelines and open a wait for item.
        Call it from a coroutine (the future belongs to the running loop)."""
        future = asyncio.get_running_loop().create_future()
        # A failure nobody awaits any more (the spider timed out) must not be
        # reported by asyncio as "exception never retrieved" at garbage collection.
        future.add_done_callback(_retrieve)
        key = id(item)
        if key not in self._entries:
            weakref.finalize(item, self._entries.pop, key, None)
        self._entries[key] = _Entry(response, future)

    def response(self, item: Any) -> Response | None:
        entry = self._entries.get(id(item))
        return entry.response if entry is not None else None

    def resolve(self, item: Any, outcome: str) -> None:
        """The item is done with the content pipelines (first outcome wins)."""
        entry = self._entries.get(id(item))
        if entry is not None and entry.future is not None and not entry.future.done():
            entry.future.set_result(outcome)

    def fail(self, item: Any, exc: BaseException) -> None:
        """The body could not be stored: the waiting spider gets exc raised."""
        entry = self._entries.get(id(item))
        if entry is not None and entry.future is not None and not entry.future.done():
            entry.future.set_exception(exc)

    async def wait(self, item: Any) -> str:
        """The outcome for item; raises what fail() was given, or CheckpointTimeout."""
        entry = self._entries.get(id(item))
        if entry is None or entry.future is None:
            return "unregistered"
        try:
            return await asyncio.wait_for(asyncio.shield(entry.future), self.timeout)
        except TimeoutError:
            raise CheckpointTimeout(
                f"item not processed by the pipelines within {self.timeout:.0f}s"
            ) from None
        finally:
            self._entries.pop(id(item), None)

    def __len__(self) -> int:
        return len(self._entries)

    # ---- signal handlers: every item ends in one of these -------------------------

    def item_scraped(self, item: Any, **_: Any) -> None:
        self.resolve(item, "scraped")

    def item_dropped(self, item: Any, **_: Any) -> None:
        self.resolve(item, "dropped")

    def item_error(self, item: Any, **_: Any) -> None:
        # A pipeline bug, already logged with its traceback by Scrapy. The page is
        # acked and its links followed: releasing it would re-deliver it forever.
        self.resolve(item, "error")


def _retrieve(future: asyncio.Future[str]) -> None:
    if not future.cancelled():
        future.exception()


_checkpoints: weakref.WeakKeyDictionary[Any, Checkpoint] = weakref.WeakKeyDictionary()


def wait_timeout(settings: Any) -> float:
    """Longer than the page store's worst case: every attempt timing out, plus backoff."""
    retries = max(0, settings.getint("PAGESTORE_RETRIES"))
    attempt = 2 * settings.getfloat("PAGESTORE_TIMEOUT")  # HEAD + PUT
    backoff = settings.getfloat("PAGESTORE_RETRY_DELAY") * (2**retries)
    return (retries + 1) * attempt + backoff + 60.0


def checkpoint_for(crawler: Crawler) -> Checkpoint:
    """The one Checkpoint of this crawler, created (and wired to signals) on first use."""
    checkpoint = _checkpoints.get(crawler)
    if checkpoint is None:
        checkpoint = Checkpoint(timeout=wait_timeout(crawler.settings))
        _checkpoints[crawler] = checkpoint
        crawler.signals.connect(checkpoint.item_scraped, signals.item_scraped, weak=False)
        crawler.signals.connect(checkpoint.item_dropped, signals.item_dropped, weak=False)
        crawler.signals.connect(checkpoint.item_error, signals.item_error, weak=False)
    return checkpoint
