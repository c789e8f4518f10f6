"""A Scrapy extension for bench_rss.py (not a benchmark itself): memory snapshots of a
running crawl at given response counts, so what grows between two points can be named.

Loaded into `scrapy crawl web` by bench_rss.py (EXTENSIONS plus PYTHONPATH=bench/), it
reads environment variables (not settings: the project's setting rules would refuse
unknown names): RSS_PROBE_AT, response counts "300,1200"; RSS_PROBE_OUT, a JSON-lines
file; RSS_PROBE_TRACE=0 leaves tracemalloc off (it inflates RSS and CPU). At each count,
after a full gc, it writes one line: VmRSS/VmHWM (anonymous and file-backed apart), the
heap tracemalloc sees (started when the crawl opens), the gc object count by type, and
every sized container held by a live object's attribute, a module global or an
lru_cache (len >= 200), so bench_rss.py can diff them; a tracemalloc snapshot goes to a
side file per count for the diff.
"""

from __future__ import annotations

import collections
import functools
import gc
import json
import os
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scrapy import signals

MIN_LEN = 200
FRAMES = 6


def _status() -> dict[str, int]:
    """VmRSS, VmHWM, RssAnon and RssFile (shared libraries' pages) in KiB, and Threads."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads"):
            out[key] = int(value.split()[0])
    return out


def _sized(value: Any) -> int | None:
    if isinstance(value, (dict, list, set, frozenset, collections.deque, bytearray)):
        return len(value)
    return None


def containers() -> dict[str, int]:
    """Every container of >= MIN_LEN entries reachable in one step from a live object's
    attributes, a module's globals or an lru_cache, by `Owner.attr` name."""
    found: dict[str, int] = {}

    def note(name: str, value: Any) -> None:
        n = _sized(value)
        if n is not None and n >= MIN_LEN:
            found[name] = found.get(name, 0) + n

    for name, module in list(sys.modules.items()):
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            note(f"{name}:{attr}", value)
    for obj in gc.get_objects():
        if isinstance(obj, functools._lru_cache_wrapper):
            size = obj.cache_info().currsize
            if size >= MIN_LEN:
                found[f"lru:{obj.__module__}.{obj.__qualname__}"] = size
            continue
        if not isinstance(obj, type):
            try:
                _attributes(obj, note)
            except Exception:  # a proxy or a model whose attribute access raises
                continue
    return found


def _attributes(obj: Any, note: Callable[[str, Any], None]) -> None:
    owner = f"{type(obj).__module__}.{type(obj).__qualname__}"
    attrs = obj.__dict__ if hasattr(obj, "__dict__") else None
    if isinstance(attrs, dict):
        for attr, value in list(attrs.items()):
            note(f"{owner}.{attr}", value)
    slots = getattr(type(obj), "__slots__", ())
    for slot in (slots,) if isinstance(slots, str) else slots:
        note(f"{owner}.{slot}", getattr(obj, slot, None))


class RssProbe:
    def __init__(self, at: list[int], out: Path, trace: bool) -> None:
        self.at = sorted(at)
        self.out = out
        self.trace = trace
        self.responses = 0

    @classmethod
    def from_crawler(cls, crawler: Any) -> RssProbe:
        at = [int(n) for n in os.environ["RSS_PROBE_AT"].split(",")]
        trace = os.environ.get("RSS_PROBE_TRACE", "1") == "1"
        probe = cls(at, Path(os.environ["RSS_PROBE_OUT"]), trace)
        crawler.signals.connect(probe.opened, signal=signals.spider_opened)
        crawler.signals.connect(probe.received, signal=signals.response_received)
        return probe

    def opened(self, spider: Any) -> None:
        if self.trace:
            tracemalloc.start(FRAMES)

    def received(self, response: Any, request: Any, spider: Any) -> None:
        self.responses += 1
        if self.at and self.responses >= self.at[0]:
            self.at.pop(0)
            self.snapshot()

    def snapshot(self) -> None:
        gc.collect()
        by_type = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
        current, _ = tracemalloc.get_traced_memory()
        record = {
            "responses": self.responses,
            **_status(),
            "traced_kib": current // 1024,
            "gc_objects": sum(by_type.values()),
            "types": dict(by_type.most_common(80)),
            "containers": containers(),
        }
        with self.out.open("a") as f:
            f.write(json.dumps(record) + "\n")
        if not self.trace:
            return
        snap = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        snap.dump(str(self.out.with_suffix(f".{self.responses}.snap")))
