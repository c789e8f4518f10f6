"""bench_traps.py's figures: what a crawl's request log says (coverage, trap share, time
to 90% of the real pages, the trap requests no crawler can judge before fetching) and the
tables it prints."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench._common import fmt, table
from extensions.content.soft404 import PROBE_SUFFIX
from scripts.testweb.expected import dead_links
from scripts.testweb.sites import Site

RUNS = ("ours", "stock", "before")


@dataclass
class TrapRun:
    label: str  # the crawler: ours, stock or before
    name: str  # its row: the label, plus the repeat when there are several
    requests: int  # served requests, robots.txt left out
    coverage: float
    trap_share: float
    non_page_share: float
    t90_s: float  # nan when coverage never reached 90%
    ended: str
    wall_s: float
    kinds: Counter[str]  # requests by the web's route kind (page, facet, session, ...)
    unjudged: tuple[int, int] = (0, 0)  # trap requests: (soft-404 probes, dead links) below

    def row(self) -> list[str]:
        t90 = "never" if math.isnan(self.t90_s) else f"{self.t90_s:.1f} s"
        return [
            self.name,
            str(self.requests),
            fmt(self.coverage, ".3f"),
            fmt(self.trap_share, ".3f"),
            fmt(self.non_page_share, ".3f"),
            t90,
            self.ended,
        ]


# ---- what the request log says ------------------------------------------------------


def measure(
    records: Sequence[dict[str, Any]],
    real: set[str],
    is_trap: Callable[[str], bool],
    is_non_page: Callable[[str], bool],
) -> tuple[int, float, float, float, float]:
    """(requests, real coverage, trap share, non-page share, time to 90% real) of the
    request log `records`, robots.txt already left out."""
    if not records:
        return 0, 0.0, math.nan, math.nan, math.nan
    fetches = sorted(records, key=lambda r: r["t_start"])
    t0 = fetches[0]["t_start"]
    need = math.ceil(0.9 * len(real))
    covered: set[str] = set()
    t90 = math.nan
    for rec in fetches:
        if rec["status"] == 200 and rec["url"] in real:
            covered.add(rec["url"])
            if math.isnan(t90) and len(covered) >= need:
                t90 = rec["t_start"] - t0
    n = len(fetches)
    traps = sum(1 for r in fetches if is_trap(r["url"]))
    non_pages = sum(1 for r in fetches if is_non_page(r["url"]))
    share = (lambda k: k / n) if n else (lambda k: math.nan)
    return n, len(covered) / len(real), share(traps), share(non_pages), t90


def unjudged_requests(
    records: Sequence[dict[str, Any]], kinds: Sequence[str], site: Site, real: set[str]
) -> tuple[int, int]:
    """(soft-404 probes, dead links) among the trap requests of `records`: the crawler's
    own probes of a made-up path, and fetches of the broken links that real pages carry
    (expected.dead_links). A crawler must fetch a dead link once to tell it is dead, so
    these are a floor under any trap share, not a trap it walked into; the share
    printed still counts them. `kinds`: each record's route kind; `real`: the
    web's real pages."""
    dead = dead_links(site, real)
    soft = [r["url"] for r, kind in zip(records, kinds, strict=True) if kind == "soft404"]
    probes = sum(1 for u in soft if u.endswith(PROBE_SUFFIX))
    return probes, sum(1 for u in soft if u in dead)


# ---- report -------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if len(kept) == len(values) and kept else math.nan


def ratio_rows(results: Sequence[TrapRun]) -> list[list[str]]:
    """ours / stock and ours / before of each figure's mean over the repeats."""
    fields = ("requests", "coverage", "trap_share", "non_page_share", "t90_s")
    means = {
        label: [_mean([float(getattr(r, f)) for r in results if r.label == label]) for f in fields]
        for label in RUNS
        if any(r.label == label for r in results)
    }
    rows = []
    for other in ("stock", "before"):
        if "ours" in means and other in means:
            cells = [
                a / b if b else math.nan for a, b in zip(means["ours"], means[other], strict=True)
            ]
            rows.append([f"ours / {other}", *(fmt(c, ".2f") for c in cells), ""])
    return rows


def unjudged_lines(results: Sequence[TrapRun]) -> str:
    """Per run, the trap requests no crawler can judge before it fetches them."""
    lines = ["\ntrap requests no crawler can judge before fetching (counted in the share)"]
    for r in results:
        probes, dead = r.unjudged
        rest = r.trap_share - (probes + dead) / r.requests if r.requests else math.nan
        lines.append(
            f"{r.name}: {probes} soft-404 probes, {dead} dead links on real pages; "
            f"trap share without them {fmt(rest, '.3f')}"
        )
    return "\n".join(lines)


def kinds_table(results: Sequence[TrapRun], shown: Sequence[str] = ()) -> str:
    """Requests by route kind: every kind some run requested, and `shown` even at 0 (a
    trap the web has that a crawler never entered is a figure too)."""
    seen = set(shown).union(*(r.kinds for r in results))
    kinds = sorted(seen, key=lambda k: (k != "page", k))
    rows = [[r.name, *(str(r.kinds[k]) for k in kinds)] for r in results]
    return table(["run", *kinds], rows)
