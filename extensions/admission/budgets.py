"""The shared half of admission: budgets and trap feedback, applied in the admit script.

What needs every worker's view lives in Redis and is charged atomically with the
enqueue (frontier/lua/traps.lua): the host's importance and budget, the facet cap, and
each URL pattern's trap state. This module only holds their settings (PRIORITY_*), the
CFG.traps table of the frontier's scripts.

Trap feedback, per host and URL pattern (patterns.py): each fetched page reports its
outcome (new, duplicate, soft_404, not_found; errors and re-crawls are neutral). The
pattern keeps decayed counts of its recent outcomes (window PRIORITY_TRAP_WINDOW). Once
it has PRIORITY_TRAP_MIN_PAGES of them, a bad share >= PRIORITY_TRAP_DEMOTE_SHARE demotes
it (its new URLs lose PRIORITY_DEMOTE_PENALTY) and >= PRIORITY_TRAP_CLOSE_SHARE closes
it: new URLs are refused at admission (`pattern_closed`, URL-seen forgets them so they
can come back), queued ones are dropped when leased. A closed pattern still lets one URL
in PRIORITY_TRAP_PROBE_EVERY through, so fresh pages can show up; after
PRIORITY_TRAP_REOPEN_AFTER fresh pages in a row it opens again with a clean slate: one bad
streak does not close a real section for good.

Past the end: a numbered sequence (/page/N, ?page=N) learns where it ends. Once
PRIORITY_TRAP_END_AFTER dead numbers (soft-404, not found, a copy of the pattern's own
page) came above the highest number fetched as new content, numbers past the lowest dead
one are refused (`past_the_end`; queued ones dropped when leased), but for one probe in
PRIORITY_TRAP_PROBE_EVERY and sitemap URLs; a new page past the end lifts it.

Generators: a page whose links of its own shape were all new to the crawl is "sprawl"
(admission/sprawl.py). It counts as new content until PRIORITY_TRAP_SPRAWL_AFTER of the
pattern's pages were sprawl; that one recounts them as bad, and so is every sprawl page
after it: a generator's pattern then closes, while a real section, whose first pages
may be sprawl but whose later ones link back into it, keeps a good share.

Host budget (on by default, never unlimited unless the operator says so):
PRIORITY_HOST_BUDGET (PRIORITY_HOST_BUDGET_SEEDED for a host a seed names, or where a
seed redirected) + PRIORITY_HOST_BUDGET_PER_REFERRER x distinct referring hosts +
PRIORITY_HOST_BUDGET_PER_SITEMAP_URL x URLs its sitemaps listed; 0 = no sized budget
(FRONTIER_MAX_PAGES_PER_HOST stays the operator's hard cap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from extensions.config import Setting, Table, at_least, between, read, satisfies

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


@dataclass(frozen=True)
class TrapConfig:
    patterns_per_host: int
    window: float
    min_pages: int
    demote_share: float
    close_share: float
    reopen_after: int
    probe_every: int
    demote_penalty: float
    facet_max: int  # query variants admitted per host + path template (0 = no cap)
    host_weight: float  # score per doubling of referring hosts
    host_bonus_max: float
    host_budget: int
    host_budget_seeded: int  # the base for a host a seed names (or redirected to)
    budget_per_referrer: int
    budget_per_sitemap_url: float
    end_after: int  # dead numbers above a sequence's highest live one that end it (0 = off)
    sprawl_after: int  # sprawl pages before a pattern's sprawl counts as bad (0 = off)


TRAPS = Table(
    TrapConfig,
    Setting("PRIORITY_PATTERNS_PER_HOST", "patterns_per_host", int, at_least(1)),
    Setting("PRIORITY_TRAP_WINDOW", "window", float, at_least(1)),
    Setting("PRIORITY_TRAP_MIN_PAGES", "min_pages", int, at_least(1)),
    Setting("PRIORITY_TRAP_DEMOTE_SHARE", "demote_share", float, between(0, 1)),
    Setting("PRIORITY_TRAP_CLOSE_SHARE", "close_share", float, between(0, 1)),
    Setting("PRIORITY_TRAP_REOPEN_AFTER", "reopen_after", int, at_least(1)),
    Setting("PRIORITY_TRAP_PROBE_EVERY", "probe_every", int, at_least(1)),
    Setting("PRIORITY_DEMOTE_PENALTY", "demote_penalty", float, at_least(0)),
    Setting("PRIORITY_FACET_MAX", "facet_max", int, at_least(0)),
    Setting("PRIORITY_HOST_WEIGHT", "host_weight", float, at_least(0)),
    Setting("PRIORITY_HOST_BONUS_MAX", "host_bonus_max", float, at_least(0)),
    Setting("PRIORITY_HOST_BUDGET", "host_budget", int, at_least(0)),
    Setting("PRIORITY_HOST_BUDGET_SEEDED", "host_budget_seeded", int, at_least(0)),
    Setting("PRIORITY_HOST_BUDGET_PER_REFERRER", "budget_per_referrer", int, at_least(0)),
    Setting("PRIORITY_HOST_BUDGET_PER_SITEMAP_URL", "budget_per_sitemap_url", float, at_least(0)),
    Setting(
        "PRIORITY_TRAP_END_AFTER",
        "end_after",
        int,
        satisfies(
            lambda n: n == 0 or n >= 2, "0 (off) or >= 2: one broken link must not end a sequence"
        ),
    ),
    Setting("PRIORITY_TRAP_SPRAWL_AFTER", "sprawl_after", int, at_least(0)),
)


def trap_config(settings: BaseSettings) -> TrapConfig:
    """ValueError names the bad setting."""
    return read(TRAPS, settings)


def pattern_state(raw: str) -> dict[str, Any]:
    """A URL pattern's trap-feedback record, "admitted,n,bad,fresh,state,probes,outcomes,
    highest live number,lowest dead number above it,dead numbers above it,sprawl pages"
    (frontier/lua/traps.lua), as operators read it (scrapy status --host, the report)."""
    values = [float(x) for x in raw.split(",")] + [0.0] * 11
    admitted, n, bad, fresh, state, probes, outcomes, live, dead, dead_count = values[:10]
    sequence = {"highest_live": int(live), "lowest_dead": int(dead), "dead": int(dead_count)}
    return {
        "state": PATTERN_STATES.get(int(state), "open"),
        "admitted": int(admitted),
        "outcomes": int(outcomes),
        "bad_share": round(bad / n, 3) if n else 0.0,
        "fresh_streak": int(fresh),
        "refused_while_closed": int(probes),
        **({"sprawl_pages": int(values[10])} if values[10] else {}),
        **({"sequence": sequence} if dead_count or live else {}),
    }


PATTERN_STATES = {0: "open", 1: "demoted", 2: "closed"}
