"""The operator's URL blocklist and the closed URL patterns, read from Redis while the
crawl runs.

`scrapy block` adds rules to the crawl's blocklist set while workers crawl, so each
worker re-reads it every URL_BLOCKLIST_REFRESH seconds and swaps the compiled rules
into its Admission whole. An invalid rule keeps the previous rules (one error line,
stat frontier/blocklist/invalid) rather than letting everything through. The patterns
trap feedback closed (each shard's closed_patterns set) are re-read at the same pace:
dispatch drops their queued URLs (the admit script refuses new ones by itself), with
the ends of numbered sequences the same feedback saw (past_the_end), and so are the
learned noise parameters (admission/noise.py). Sooner when another worker changed the
closed set: every frontier reply counts each shard's changes ("closed_seen", util.lua),
and a count that moved makes the next lease read the set before it dispatches (at delay
0 a second worker had fetched a closed tarpit's queued pages for up to the 5 s between
reads: 13-34 where the worker that closed it fetched 8).

Stats: frontier/blocklist/changed  reads brought forward by a change another reply showed
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from extensions.admission.filters import compile_block_rules
from extensions.admission.noise import learned
from extensions.state.connection import as_str

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.statscollectors import StatsCollector

    from extensions.admission.admit import Admission
    from extensions.state.connection import AnyAsyncRedis

logger = logging.getLogger(__name__)


# A closed-set member "n|<number>|<pattern>": the pattern's numbered sequence ends
# there, and larger numbers are refused (traps.lua, past the end).
CEILING_MARK = "n|"


def split_closed(members: list[str]) -> tuple[frozenset[str], dict[str, int]]:
    """A closed_patterns set's members: (closed patterns, pattern -> end of sequence)."""
    closed: set[str] = set()
    ceilings: dict[str, int] = {}
    for member in members:
        if member.startswith(CEILING_MARK):
            number, _, pattern = member[len(CEILING_MARK) :].partition("|")
            if number.isdigit() and pattern:
                ceilings[pattern] = int(number)
        else:
            closed.add(member)
    return frozenset(closed), ceilings


def log_changes(closed: frozenset[str], reopened: frozenset[str], ends: dict[str, int]) -> None:
    """One line per pattern this worker's report closed or reopened, and per sequence end
    it set: the one worker whose report made the change says it, when it happens. A real
    section judged a trap loses its pages silently otherwise (the report lists the closed
    patterns only at the end)."""
    for pattern in sorted(closed):
        logger.info(
            "Trap feedback closed URL pattern %s: most of its recent pages were copies,"
            " not-found pages or pages linking only new URLs of their own (sprawl); its"
            " queued URLs are dropped and new ones refused but for probes",
            pattern,
        )
    for pattern in sorted(reopened):
        logger.info("Trap feedback reopened URL pattern %s: fresh pages in a row", pattern)
    for pattern, number in sorted(ends.items()):
        logger.info("Numbered sequence %s ends at %d: larger numbers are refused", pattern, number)


class BlocklistRefresh:
    def __init__(
        self,
        *,
        redis: AnyAsyncRedis,
        key: str,
        admission: Admission,
        stats: StatsCollector,
        clock: Callable[[], float],
        refresh_s: float,
        closed_keys: list[str],
        noise_key: str,
    ) -> None:
        self.noise_key = noise_key
        self.redis = redis
        self.key = key
        self.closed_keys = closed_keys
        self.admission = admission
        self.stats = stats
        self.clock = clock
        self.refresh_s = refresh_s
        self._due_at = 0.0
        self._lines: list[str] | None = None  # the rules in force; None = never read
        self._seen: dict[str, int] = {}  # shard stats key -> closed-set changes seen
        self.stale = False  # a reply showed a change not read yet

    async def add(self, rules: list[str]) -> None:
        """URL_BLOCKLIST: the settings' rules join the shared set at open."""
        if rules:
            await self.redis.sadd(self.key, *rules)

    def patterns_changed(self, closed: list[str] | None, reopened: list[str] | None) -> None:
        """This worker's report closed or reopened patterns (or set or lifted a
        sequence's end): in force before the next read."""
        if not closed and not reopened:
            return
        gone_patterns, gone_ends = split_closed(reopened or [])
        new_patterns, new_ends = split_closed(closed or [])
        log_changes(new_patterns - self.admission.closed_patterns, gone_patterns, new_ends)
        patterns = (self.admission.closed_patterns | new_patterns) - gone_patterns
        self.admission.closed_patterns = frozenset(patterns)
        if gone_ends or new_ends:
            ends = {k: v for k, v in self.admission.ceilings.items() if gone_ends.get(k) != v}
            self.admission.ceilings = {**ends, **new_ends}

    def saw(self, closed_seen: dict[str, int] | None) -> None:
        """A reply's closed-set change counts, per shard: a moved one makes the closed
        set stale (this worker's own changes too: a read costs little, and they are rare)."""
        for shard, changes in (closed_seen or {}).items():
            if self._seen.get(shard, changes) != changes and not self.stale:
                self.stale = True
                self.stats.inc_value("frontier/blocklist/changed")
            self._seen[shard] = changes

    def noise_learned(self, host: str, name: str) -> None:
        """This process learned a noise parameter: in force before the next read."""
        names = self.admission.noise.get(host, frozenset()) | {name}
        self.admission.noise = {**self.admission.noise, host: names}

    async def refresh_if_due(self) -> None:
        if self.stale or self.clock() >= self._due_at:
            await self.refresh()

    async def refresh(self) -> None:
        self._due_at = self.clock() + self.refresh_s
        self.stale = False
        members: list[str] = []
        for key in self.closed_keys:  # one per shard: separate slots on a cluster
            members.extend(as_str(m) for m in await self.redis.smembers(key))
        closed, ceilings = split_closed(members)
        self.stats.set_value("frontier/patterns_closed", len(closed))
        self.stats.set_value("frontier/sequence_ends", len(ceilings))
        self.admission.closed_patterns = closed
        self.admission.ceilings = ceilings
        self.admission.noise = learned(
            [as_str(m) for m in await self.redis.smembers(self.noise_key)]
        )
        lines = sorted(as_str(m) for m in await self.redis.smembers(self.key))
        if lines == self._lines:
            return
        self._lines = lines
        try:
            self.admission.block_rules = compile_block_rules(lines)
        except ValueError as exc:
            logger.error("Blocklist not updated: %s", exc)
            self.stats.inc_value("frontier/blocklist/invalid")
            return
        logger.info("Blocklist: %d rules", len(lines))
