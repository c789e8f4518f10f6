"""The near-duplicate check's settings (NEARDUP_*), read and validated up front.

The crawl command checks them before a crawl starts (crawlproj/commands/crawl.py);
ContentDedupPipeline reads them once at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from extensions.config import Setting, Table, between, read
from extensions.content.simhash_index import MAX_LOOKUPS, plan_blocks

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# Chosen on three labelled corpora (bench/README.md "Near duplicates"), for the benches and
# corpus tests; the crawl reads NEARDUP_* (equal: tests/unit/test_config.py).
DEFAULT_MAX_DISTANCE = 13
DEFAULT_MIN_RESEMBLANCE = 0.65


@dataclass(frozen=True)
class NeardupConfig:
    enabled: bool
    max_distance: int
    min_resemblance: float
    blocks: int
    bucket_cap: int
    max_candidates: int
    min_words: int
    threads: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> NeardupConfig:
        """ValueError names the bad setting."""
        return read(NEARDUP, settings)


def _plannable(blocks: int, earlier: Mapping[str, Any]) -> str | None:
    """Rule: the index can be built for this many blocks at NEARDUP_MAX_DISTANCE."""
    distance = earlier["NEARDUP_MAX_DISTANCE"]
    try:
        plan_blocks(distance, blocks)
    except ValueError:
        return f"a block count needing <= {MAX_LOOKUPS} look-ups at NEARDUP_MAX_DISTANCE {distance}"
    return None


NEARDUP = Table(
    NeardupConfig,
    Setting("NEARDUP_ENABLED", "enabled", bool),
    Setting("NEARDUP_MAX_DISTANCE", "max_distance", int, between(0, 32)),
    Setting("NEARDUP_MIN_RESEMBLANCE", "min_resemblance", float, between(0.5, 1.0)),
    Setting("NEARDUP_BLOCKS", "blocks", int, between(1, 16), _plannable),
    Setting("NEARDUP_BUCKET_CAP", "bucket_cap", int, between(1, 10**6)),
    Setting("NEARDUP_MAX_CANDIDATES", "max_candidates", int, between(1, 10**4)),
    Setting("NEARDUP_MIN_WORDS", "min_words", int, between(0, 10**6)),
    Setting("NEARDUP_THREADS", "threads", int, between(1, 64)),
)
