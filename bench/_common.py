"""Helpers shared by the frontier benchmarks (not a benchmark itself).

- `redis_server()`: a throw-away redis-server on 127.0.0.1 that always stops by itself
  (wrapped in coreutils `timeout`, killed with its parent via PR_SET_PDEATHSIG, and
  shut down by PID at the end of the `with` block).
- `analyse()`: per-IP politeness and the politeness ceiling from a TestWeb request log.
- `crawl()`: one `scrapy crawl web` run against a fresh TestWeb, its log kept on disk.
"""

from __future__ import annotations

import contextlib
import math
import resource
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from extensions.state.connection import EmbeddedRedis, find_redis_server  # noqa: E402
from scripts.crawlrun import run_crawl, write_seeds  # noqa: E402
from scripts.testweb import TestWeb, WebSpec  # noqa: E402

NOISE_NOTE = (
    "NOTE: figures are noisy: measured on a shared 2-core machine (the test web, the "
    "crawler and Redis all share it); compare ratios measured in the same run, not absolutes."
)


# ---- a redis-server of our own ------------------------------------------------------


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """Yield the URL of a fresh redis-server on 127.0.0.1: the project's embedded Redis,
    which dies with this process (PR_SET_PDEATHSIG) and is shut down when the block ends."""
    server = EmbeddedRedis(data_dir=workdir, binary=find_redis_server())
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


# ---- politeness analysis from the server's request log ----------------------------


@dataclass
class IpStats:
    ip: str
    n: int
    fetch_sum: float
    first_start: float
    last_end: float
    max_inflight: int
    overlaps: int  # starts while another request on this IP was in flight
    gaps: list[float] = field(default_factory=list)  # end-to-start, consecutive fetches


@dataclass
class Politeness:
    delay: float
    t0: float
    t_end: float
    pages: int  # every logged request (robots.txt included: it occupies the IP too)
    ips: dict[str, IpStats]
    robots: int = 0  # of which /robots.txt fetches

    # -- violations --
    @property
    def max_inflight(self) -> int:
        return max((s.max_inflight for s in self.ips.values()), default=0)

    @property
    def overlaps(self) -> int:
        return sum(s.overlaps for s in self.ips.values())

    @property
    def all_gaps(self) -> list[float]:
        return [g for s in self.ips.values() for g in s.gaps]

    def short_gaps(self, slack: float = 0.0) -> int:
        return sum(1 for g in self.all_gaps if g < self.delay - slack)

    # -- ceiling --
    def ideal(self, s: IpStats) -> float:
        # n fetches of their measured durations, separated by n-1 delays.
        return s.fetch_sum + (s.n - 1) * self.delay

    def actual(self, s: IpStats) -> float:
        return s.last_end - self.t0

    @property
    def ceiling_ratio(self) -> float:
        ideal = sum(self.ideal(s) for s in self.ips.values())
        actual = sum(self.actual(s) for s in self.ips.values())
        return ideal / actual if actual > 0 else math.nan

    @property
    def span(self) -> float:
        return self.t_end - self.t0

    @property
    def mean_fetch(self) -> float:
        n = sum(s.n for s in self.ips.values())
        return sum(s.fetch_sum for s in self.ips.values()) / n if n else math.nan

    def starts_within(self, window: float) -> int:
        return sum(1 for s in self._starts if s - self.t0 < window)

    # -- where the time went: actual_T - ideal_T = start lag + sum(gap - delay) --
    @property
    def start_lag(self) -> float:
        return sum(s.first_start - self.t0 for s in self.ips.values())

    @property
    def excess_gap(self) -> float:
        return sum(max(0.0, g - self.delay) for g in self.all_gaps)

    @property
    def gap_shortfall(self) -> float:
        return sum(min(0.0, g - self.delay) for g in self.all_gaps)

    _starts: list[float] = field(default_factory=list)


def analyse(records: Sequence[dict[str, Any]], delay: float) -> Politeness:
    """Per-IP politeness from TestWeb log records (server-side t_start / t_end)."""
    by_ip: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for rec in records:
        by_ip[rec["server_ip"]].append((rec["t_start"], rec["t_end"]))
    if not by_ip:
        return Politeness(delay, 0.0, 0.0, 0, {})
    t0 = min(s for spans in by_ip.values() for s, _ in spans)
    t_end = max(e for spans in by_ip.values() for _, e in spans)
    stats: dict[str, IpStats] = {}
    starts: list[float] = []
    for ip, spans in by_ip.items():
        spans.sort()
        starts += [s for s, _ in spans]
        level, peak, overlaps = 0, 0, 0
        for _, change in sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans]):
            if change == 1 and level >= 1:
                overlaps += 1
            level += change
            peak = max(peak, level)
        gaps, prev_end = [], None
        for start, end in spans:
            if prev_end is not None:
                gaps.append(start - prev_end)
            prev_end = end if prev_end is None else max(prev_end, end)
        stats[ip] = IpStats(
            ip=ip,
            n=len(spans),
            fetch_sum=sum(e - s for s, e in spans),
            first_start=spans[0][0],
            last_end=max(e for _, e in spans),
            max_inflight=peak,
            overlaps=overlaps,
            gaps=gaps,
        )
    robots = sum(1 for rec in records if rec.get("path") == "/robots.txt")
    result = Politeness(delay, t0, t_end, len(records), stats, robots)
    result._starts = sorted(starts)
    return result


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[k]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


# ---- one crawl ----------------------------------------------------------------------


@dataclass
class CrawlRun:
    label: str
    returncode: int
    wall_s: float
    cpu_s: float  # user+sys of the scrapy process and its children (embedded Redis)
    records: list[dict[str, Any]]
    items: int
    reason: str
    out: Path
    expected_pages: int
    log_tail: str


def crawl(
    label: str,
    spec: WebSpec,
    out: Path,
    settings: dict[str, Any],
    timeout: float,
) -> CrawlRun:
    """Fresh TestWeb (same spec) + fresh CRAWL_DATA_DIR, one `scrapy crawl web`."""
    out.mkdir(parents=True, exist_ok=True)
    with TestWeb(spec, log_path=out / "testweb-requests.jsonl", lifetime=timeout + 60) as web:
        seeds = write_seeds(out / "seeds.txt", web.seeds)
        merged = {
            "DNS_HOSTS_MAP": web.hosts_map_setting(),
            # Sandboxed: only the pinned 127.x names resolve, and loopback is allowed.
            "DNS_HOSTS_MAP_ONLY": True,
            "DNS_ALLOWED_NETWORKS": "127.0.0.0/8",
            "CRAWL_SUMMARY_FILE": str(out / "summary.json"),
            **settings,
        }
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        try:
            result = run_crawl(seeds, out / "data", merged, timeout=timeout)
            rc, stderr, items = result.returncode, result.stderr, len(result.items)
        except AssertionError as exc:  # run_crawl's timeout: the process was killed
            rc, stderr, items = -9, str(exc), 0
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        records = web.requests()
        expected = len(web.pages)
    (out / "crawl.log").write_text(stderr)
    reason = "?"
    summary = out / "summary.json"
    if summary.exists():
        import json

        reason = json.loads(summary.read_text()).get("reason", "?")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return CrawlRun(label, rc, wall, cpu, records, items, reason, out, expected, stderr[-3000:])


def fmt(value: float, spec: str = ".2f") -> str:
    return (
        "n/a"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else format(value, spec)
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
