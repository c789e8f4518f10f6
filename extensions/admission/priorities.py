"""Front queues: how many there are (one per weight) and which one a request may name.

A priority is a front-queue index chosen at admission; the frontier weighs the queues and
re-crawls enter one of them. Both read the count from here, so neither stage imports the
other for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from extensions.config import WHOLE_NUMBERS, Setting, Table, read, satisfies

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# Context key of the number of front queues, for the rules of settings that name one.
FRONT_QUEUES = "front queues"


@dataclass(frozen=True)
class PriorityWeights:
    weights: tuple[int, ...]  # one per front queue, priority 0 first


PRIORITIES = Table(
    PriorityWeights,
    Setting(
        "FRONTIER_PRIORITY_WEIGHTS",
        "weights",
        WHOLE_NUMBERS,
        satisfies(lambda w: bool(w) and min(w) > 0, "weights > 0, one per priority"),
    ),
)


def priority_weights(settings: BaseSettings) -> tuple[int, ...]:
    """FRONTIER_PRIORITY_WEIGHTS: one weight per front queue, priority 0 first."""
    return read(PRIORITIES, settings).weights


def front_queue(value: int, earlier: Mapping[str, Any]) -> str | None:
    """Rule: a front-queue index (the caller passes FRONT_QUEUES as context)."""
    last = earlier[FRONT_QUEUES] - 1
    return None if 0 <= value <= last else f"a front queue, 0..{last}"
