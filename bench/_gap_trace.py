"""Where ours' end-to-start gaps went, from bench/_trace_scheduler.py's trace (--trace of
bench_politeness.py; not a benchmark itself).

gap - delay = (client 'done' stamp - server end)      response seen late by the crawler
            + (lease sent - (done stamp + delay))     IP due, nobody asked the frontier
            + (lease returned - lease sent)           lease round trip incl. event loop
            + (handed to engine - lease returned)     waiting in the scheduler's buffer
            + (server start - handed to engine)       downloader / connection / request
"""

from __future__ import annotations

import bisect
import itertools
import json
from pathlib import Path
from typing import Any

from _common import CrawlRun, fmt, median, percentile, table

Gap = tuple[float, ...]  # (excess, then one term per COMPONENTS entry after it)
COMPONENTS = [
    "excess (gap-delay)",
    "done stamp lag",
    "due -> lease sent",
    "lease round trip",
    "buffer -> engine",
    "engine -> server start",
]


class Trace:
    """The scheduler trace indexed by (ip, url) and by IP."""

    def __init__(self, path: Path) -> None:
        events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        self.done = {(e["ip"], e["url"]): e["t"] for e in events if e["ev"] == "done"}
        self.dispatch = {(e["ip"], e["url"]): e["t"] for e in events if e["ev"] == "dispatch"}
        self.leases: dict[str, list[tuple[float, float]]] = {}  # ip -> (returned, sent)
        for e in events:
            if e["ev"] == "lease" and e.get("ips"):
                for ip in e["ips"]:
                    self.leases.setdefault(ip, []).append((e["t"], e["sent"]))


def ip_gaps(trace: Trace, ip: str, recs: list[dict[str, Any]], delay: float) -> list[Gap]:
    """The decomposed gaps between IP `ip`'s consecutive traced fetches."""
    recs.sort(key=lambda r: r["t_start"])
    returns = sorted(trace.leases.get(ip, []))
    keys = [t for t, _ in returns]
    gaps: list[Gap] = []
    for prev, cur in itertools.pairwise(recs):
        stamp = trace.done.get((ip, prev["url"]))
        handed = trace.dispatch.get((ip, cur["url"]))
        k = bisect.bisect_right(keys, handed if handed is not None else cur["t_start"]) - 1
        if stamp is None or handed is None or k < 0:
            continue  # robots.txt hops report their end themselves: not traced here
        returned, sent = returns[k]
        due = stamp + delay
        gaps.append(
            (
                cur["t_start"] - prev["t_end"] - delay,
                stamp - prev["t_end"],
                sent - due,
                returned - sent,
                handed - returned,
                cur["t_start"] - handed,
            )
        )
    return gaps


def component_rows(parts: list[Gap]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for label, subset in (
        ("all traced gaps", parts),
        ("gaps with excess > 0.1 s", [p for p in parts if p[0] > 0.1]),
    ):
        if not subset:
            continue
        for i, name in enumerate(COMPONENTS):
            col = [p[i] for p in subset]
            rows.append(
                [
                    label if i == 0 else "",
                    name,
                    len(col),
                    fmt(sum(col), ".1f"),
                    fmt(median(col), ".3f"),
                    fmt(percentile(col, 0.9), ".3f"),
                    fmt(max(col), ".3f"),
                ]
            )
    return rows


def decompose(run: CrawlRun, delay: float) -> str:
    """Split each end-to-start gap of ours into the steps between them (see above)."""
    path = run.out / "scheduler-trace.jsonl"
    if not path.exists():
        return "(no scheduler trace)"
    trace = Trace(path)
    by_ip: dict[str, list[dict[str, Any]]] = {}
    for rec in run.records:
        by_ip.setdefault(rec["server_ip"], []).append(rec)
    parts = [gap for ip, recs in by_ip.items() for gap in ip_gaps(trace, ip, recs, delay)]
    if not parts:
        return "(no traced gaps)"
    head = (
        "== ours: where the excess over the delay went (scheduler trace; "
        "client clock = server clock, same host) =="
    )
    headers = ["gaps", "component", "n", "sum s", "p50", "p90", "max"]
    return head + "\n" + table(headers, component_rows(parts))
