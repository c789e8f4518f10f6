"""Bounded memo tables for admission's pure string functions.

A page's outlinks share hosts, path templates and referrer pairs, so the functions of
those strings (path templates, pattern families) see the same inputs over
and over: a dict lookup replaces the work. Only pure functions of their key are memoised
(nothing that a setting, the blocklist or learned noise parameters can change), and a
table that reaches its cap is emptied whole: memory stays bounded over a long crawl at
the cost of recomputing the live keys once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")

# Entries per table: ~100-200 B each, so a few MB at most; a crawl's live templates are
# far fewer.
MEMO_ENTRIES = 20_000


def remember(memo: dict[K, V], key: K, value: V, cap: int = MEMO_ENTRIES) -> V:
    """Store `value` under `key` (emptying `memo` first when it is full); returns it."""
    if len(memo) >= cap:
        memo.clear()
    memo[key] = value
    return value


def recall(memo: dict[K, V], key: K, compute: Callable[[K], V]) -> V:
    """memo's value for `key`, computed (and remembered) on a miss."""
    value = memo.get(key)
    if value is None:
        value = remember(memo, key, compute(key))
    return value
