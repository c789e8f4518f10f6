"""Site-specific extractors, registered by host pattern.

A spider author adds a module to this package (every module in the packages
named by EXTRACTOR_MODULES is imported at start) with one function per site:

    from crawlproj.extractors import register

    @register("docs.example.org", "*.docs.example.org")
    def example_docs(response: TextResponse) -> dict[str, Any]:
        return {"title": response.css("title::text").get()}

The `web` spider runs every extractor whose pattern matches the page's host
(fnmatch glob, case-insensitive, port ignored) on HTML responses and merges
the returned fields, in registration order, into the row's ``extracted`` dict.
An extractor that raises is logged and counted (``extractors/errors/<name>``);
the page's row and stored body are not affected, and ``scrapy replay`` re-runs
a fixed extractor over the stored bodies later.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from scrapy.utils.misc import walk_modules_iter

if TYPE_CHECKING:
    from scrapy.http import TextResponse

logger = logging.getLogger(__name__)

# Extractors run on HTML pages only (the spider's parse_page), which are text.
Extractor = Callable[["TextResponse"], dict[str, Any]]


class Stats(Protocol):
    """Where the extraction path counts: the crawl's StatsCollector, or replay's counters."""

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None: ...


@dataclass(frozen=True)
class Registered:
    name: str  # module.function, used in logs and stats
    patterns: tuple[str, ...]  # lowercased host globs
    func: Extractor

    def matches(self, host: str) -> bool:
        return any(fnmatch.fnmatchcase(host, pattern) for pattern in self.patterns)


@dataclass
class Registry:
    """Extractors by host pattern; ``registry`` below is the one the spider uses."""

    entries: list[Registered] = field(default_factory=list)
    _loaded: set[str] = field(default_factory=set)

    def register(self, *patterns: str) -> Callable[[Extractor], Extractor]:
        """Decorator: run the function on pages whose host matches any pattern."""
        if not patterns or not all(isinstance(p, str) and p.strip() for p in patterns):
            raise ValueError("register() needs at least one host pattern, e.g. '*.example.org'")

        def decorate(func: Extractor) -> Extractor:
            name = f"{func.__module__}.{func.__qualname__}"
            # Re-importing a module (reload, tests) replaces its entry, not duplicates it.
            self.entries = [e for e in self.entries if e.name != name]
            globs = tuple(p.strip().lower() for p in patterns)
            self.entries.append(Registered(name, globs, func))
            return func

        return decorate

    def for_host(self, host: str) -> list[Registered]:
        host = host.lower().rstrip(".")
        return [entry for entry in self.entries if entry.matches(host)]

    def load(self, packages: Iterable[str]) -> None:
        """Import every module of the packages (once), so their @register lines run."""
        for package in packages:
            if package not in self._loaded:
                for _module in walk_modules_iter(package):
                    pass  # importing runs the modules' @register lines
                self._loaded.add(package)

    def run(self, response: TextResponse, stats: Stats | None = None) -> dict[str, Any]:
        """Merged fields of every matching extractor; failures logged and skipped."""
        host = urlsplit(response.url).hostname or ""
        merged: dict[str, Any] = {}
        for entry in self.for_host(host):
            try:
                fields = entry.func(response)
            except Exception as exc:
                # One line per failure for operators; the traceback for the author.
                logger.warning("Extractor %s failed on %s: %r", entry.name, response.url, exc)
                logger.debug("Extractor %s traceback", entry.name, exc_info=True)
                _inc(stats, f"extractors/errors/{entry.name}")
                continue
            if not isinstance(fields, dict):
                logger.warning("Extractor %s returned %s, not a dict", entry.name, type(fields))
                _inc(stats, f"extractors/errors/{entry.name}")
                continue
            merged.update(fields)
            _inc(stats, f"extractors/ran/{entry.name}")
        return merged


def _inc(stats: Stats | None, key: str) -> None:
    if stats is not None:
        stats.inc_value(key)


registry = Registry()
register = registry.register
