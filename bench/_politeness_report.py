"""The tables bench_politeness.py prints from its crawls (not a benchmark itself):
throughput and politeness, where each scheduler lost time against the politeness
ceiling, the worst IPs, and a timeline of fetch starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from _common import CrawlRun, Politeness, fmt, median, percentile, table


@dataclass(frozen=True)
class Setup:
    """What the ceilings are computed from."""

    delay: float  # politeness delay (s)
    fetch: float  # the test web's fetch time (s)
    n_ips: int
    window: float  # early-rate window (s)

    @property
    def start_ceiling(self) -> float:
        """Pages/s when every IP with work at the start is busy at exactly the delay."""
        return self.n_ips / (self.fetch + self.delay)


THROUGHPUT_HEADERS = [
    "scheduler",
    "requests (robots)",
    "pages ok/expected",
    "span s",
    "wall s",
    "pages/s",
    "/start ceil",
    "first {window:g}s /s",
    "/start ceil",
    "ceiling ratio",
    "max inflight/IP",
    "overlaps",
    "gaps<delay",
    "min gap",
    "median gap",
]


def throughput_row(name: str, pol: Politeness, run: CrawlRun, setup: Setup) -> list[Any]:
    pages_s = (pol.pages - pol.robots) / pol.span if pol.span else float("nan")
    early = pol.starts_within(setup.window) / setup.window
    fetched = {
        r["url"] for r in run.records if r.get("status") == 200 and r.get("path") != "/robots.txt"
    }
    return [
        name,
        f"{pol.pages} ({pol.robots})",
        f"{len(fetched)}/{run.expected_pages}",
        fmt(pol.span, ".1f"),
        fmt(run.wall_s, ".1f"),
        fmt(pages_s),
        fmt(pages_s / setup.start_ceiling, ".3f"),
        fmt(early, ".1f"),
        fmt(early / setup.start_ceiling, ".3f"),
        fmt(pol.ceiling_ratio, ".3f"),
        f"{pol.max_inflight}",
        f"{pol.overlaps}",
        f"{pol.short_gaps()}/{len(pol.all_gaps)}",
        fmt(min(pol.all_gaps, default=float("nan")), ".3f"),
        fmt(median(pol.all_gaps), ".3f"),
    ]


def print_throughput(pols: dict[str, Politeness], runs: dict[str, CrawlRun], setup: Setup) -> None:
    rows = [throughput_row(name, pol, runs[name], setup) for name, pol in pols.items()]
    headers = [h.format(window=setup.window) for h in THROUGHPUT_HEADERS]
    print()
    print("== Throughput and politeness (server-side request log) ==")
    print(table(headers, rows))


def print_definitions(pols: dict[str, Politeness], setup: Setup) -> None:
    print()
    print("Definitions:")
    print(
        "  span = last response end - first request start (server log); pages/s = "
        "requests other than /robots.txt / span; wall = whole `scrapy crawl` process."
    )
    print("  'first Ns /s' = requests started in the first N seconds after the first fetch / N.")
    print(
        f"  start ceiling = IPs with work at the start / (fetch + delay) = {setup.n_ips} / "
        f"({setup.fetch:g} + {setup.delay:g}) = {setup.start_ceiling:.1f} pages/s (every IP "
        "has its seed)."
    )
    longest = max(
        (max((pol.ideal(st) for st in pol.ips.values()), default=0.0) for pol in pols.values()),
        default=0.0,
    )
    print(
        f"  whole-crawl pages/s is bounded by the largest IP: its ideal_T alone is "
        f"{longest:.1f}s, so pages/s over the span cannot approach the start ceiling on a "
        f"skewed web; the ceiling ratio below accounts for that."
    )
    print_ceiling_definitions(setup.delay)


def print_ceiling_definitions(delay: float) -> None:
    print(
        "  ceiling ratio = sum_i ideal_T_i / sum_i actual_T_i over IPs i, where ideal_T_i = "
        "(n_i - 1) * delay + sum of IP i's n_i fetch durations"
    )
    print(
        "    (= (n_i - 1) * (fetch + delay) + fetch with fetch = IP i's mean server-side "
        "duration) and actual_T_i = end of IP i's last fetch - start of the crawl's first fetch."
    )
    print(
        "    n_i = requests IP i actually served in that run. 1.0 = every IP busy "
        "back-to-back from t0 at exactly the delay; > 1 is only possible by breaking it."
    )
    print(
        "  violations: max inflight/IP > 1 and 'overlaps' (request starts while another on "
        "the same IP is in flight); gaps<delay = end-to-start gaps on one IP shorter than "
        f"the delay ({delay:g}s, no slack), all counted."
    )
    print(
        "  stock/redis pace START-to-start (Scrapy's DOWNLOAD_DELAY, +-50% jitter), so their "
        "end-to-start gaps are ~delay*U(0.5,1.5) - fetch: short gaps are by design."
    )


LOSS_HEADERS = [
    "scheduler",
    "sum ideal s",
    "sum actual s",
    "start lag s",
    "lag p50",
    "lag max",
    "excess gap s",
    "short-gap s",
    "excess p50",
    "p90",
    "p99",
    "max",
    "gaps >delay+0.5",
    "mean fetch",
]


def loss_row(name: str, pol: Politeness, delay: float) -> list[Any]:
    ideal = sum(pol.ideal(s) for s in pol.ips.values())
    actual = sum(pol.actual(s) for s in pol.ips.values())
    excess = [g - delay for g in pol.all_gaps if g > delay]
    lags = sorted(s.first_start - pol.t0 for s in pol.ips.values())
    return [
        name,
        fmt(ideal, ".0f"),
        fmt(actual, ".0f"),
        fmt(pol.start_lag, ".1f"),
        fmt(median(lags), ".2f"),
        fmt(lags[-1] if lags else float("nan"), ".2f"),
        fmt(pol.excess_gap, ".1f"),
        fmt(pol.gap_shortfall, ".1f"),
        fmt(median(excess), ".3f"),
        fmt(percentile(excess, 0.9), ".3f"),
        fmt(percentile(excess, 0.99), ".3f"),
        fmt(max(excess, default=float("nan")), ".2f"),
        f"{sum(1 for e in excess if e > 0.5)}",
        fmt(pol.mean_fetch, ".3f"),
    ]


def print_losses(pols: dict[str, Politeness], delay: float) -> None:
    print()
    print("== Where each scheduler lost time against the ceiling ==")
    print(
        "  sum_i actual_T_i - sum_i ideal_T_i = sum of start lags (first fetch of IP i - t0)"
        " + sum of (gap - delay) over all gaps"
    )
    print(table(LOSS_HEADERS, [loss_row(name, pol, delay) for name, pol in pols.items()]))
    print()
    print("  Top IPs by lost time (actual_T - ideal_T), per scheduler:")
    for name, pol in pols.items():
        worst = sorted(pol.ips.values(), key=lambda s: pol.ideal(s) - pol.actual(s))[:3]
        desc = ", ".join(
            f"{s.ip} n={s.n} lost {pol.actual(s) - pol.ideal(s):.1f}s "
            f"(lag {s.first_start - pol.t0:.1f}s, excess gaps "
            f"{sum(max(0.0, g - delay) for g in s.gaps):.1f}s)"
            for s in worst
        )
        print(f"    {name}: {desc}")


def timeline(runs: dict[str, Politeness], bin_s: float) -> str:
    longest = max((p.span for p in runs.values()), default=0)
    bins = int(longest // bin_s) + 1
    rows = []
    for b in range(bins):
        row = [f"{b * bin_s:5.0f}-{(b + 1) * bin_s:.0f}s"]
        for pol in runs.values():
            starts = sum(1 for s in pol._starts if b * bin_s <= s - pol.t0 < (b + 1) * bin_s)
            busy = sum(
                1
                for st in pol.ips.values()
                if st.first_start - pol.t0 < (b + 1) * bin_s and st.last_end - pol.t0 >= b * bin_s
            )
            row.append(f"{starts / bin_s:6.1f} /s {busy:4d} IPs")
        rows.append(row)
    return table(["t (from first fetch)", *runs], rows)


def print_timeline(pols: dict[str, Politeness], bin_s: float) -> None:
    print()
    print(
        f"== Timeline: fetch starts per second and IPs between first and last fetch, "
        f"per {bin_s:g}s bin =="
    )
    print(timeline(pols, bin_s))
