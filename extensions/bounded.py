"""A bounded local copy: the newest entries of an OrderedDict, the least recently put first.

Worker-local copies of shared state (robots verdicts and failure counts, soft-404 states,
IP gaps) must not grow with a broad crawl; one evicted is read or learned again.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def keep_newest(entries: OrderedDict[K, V], key: K, value: V, cap: int) -> None:
    """Put `key` as the newest entry, then drop the oldest past `cap`."""
    entries[key] = value
    entries.move_to_end(key)
    while len(entries) > cap:
        entries.popitem(last=False)
