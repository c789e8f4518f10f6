"""Freshness achieved by each re-crawl policy with the same fetch budget, in one run.

A test web whose pages change as seeded Poisson processes (rates from once a second to
never) is crawled in continuous mode once per policy, each run on a fresh test web and
crawl folder for the same time. The budget is the same for all: stored URLs /
RECRAWL_INTERVAL fetches per second. Freshness is measured, not modelled: from the
test web's request log we know which version of each page the crawler holds at every
moment (a 200 stores the version served, a 304 confirms it), and the test web's known
change times give the live version; freshness = the fraction of (page, time) samples
where they match, after a warm-up in which every page is found and first estimated.
"model" is Cho & Garcia-Molina's F for the true rates at the fetch frequencies each
page actually got (a check on the measurement).

    .venv/bin/python bench/bench_freshness.py     # --seconds 100 --warmup 30 --interval 8
"""

from __future__ import annotations

import argparse
import bisect
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, fmt, table

from extensions.recrawl.policy import freshness_at_frequency
from scripts.crawlrun import run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from scripts.testweb.changes import ChangeClock

# Change rates per page path (changes per second); the root and /page/5 never change.
RATES = {"/page/1": 1.0, "/page/2": 0.25, "/page/3": 1 / 15, "/page/4": 1 / 60}
POLICIES: list[tuple[str, dict[str, Any]]] = [
    ("uniform (no cap)", {"RECRAWL_POLICY": "uniform", "RECRAWL_CAP_FRESHNESS": 0.0}),
    ("proportional", {"RECRAWL_POLICY": "proportional"}),
    ("optimal", {"RECRAWL_POLICY": "optimal"}),
    ("uniform + cap (shipped)", {}),
]


def web_spec(hosts: int) -> WebSpec:
    return WebSpec(
        hosts=[
            HostSpec(f"f{i:02d}.test", pages=5, validators=True, change_rates=dict(RATES))
            for i in range(hosts)
        ],
        seed=3,
    )


def crawl(spec: WebSpec, out: Path, settings: dict[str, Any], seconds: float) -> list[dict]:
    spec.epoch = 0.0  # each run gets its own time 0: the same change times relative to it
    out.mkdir(parents=True, exist_ok=True)
    with TestWeb(spec, log_path=out / "requests.jsonl", lifetime=seconds + 120) as web:
        seeds = write_seeds(out / "seeds.txt", web.seeds)
        merged = {
            "DNS_HOSTS_MAP": web.hosts_map_setting(),
            "PAGESTORE_URI": f"file://{out}/store",
            "RECRAWL_CONTINUOUS": True,
            "CLOSESPIDER_TIMEOUT": seconds,
            "LOG_LEVEL": "WARNING",
            **settings,
        }
        run_crawl(seeds, out / "data", merged, timeout=seconds + 120)
        return [r for r in web.requests() if r["path"] != "/robots.txt"]


def measure(spec: WebSpec, records: list[dict], warmup: float) -> dict[str, Any]:
    """Measured and modelled freshness over [start + warmup, last fetch]."""
    by_page: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        by_page[(r["host"], r["path"])].append(r)
    start = min(r["t_start"] for r in records) + warmup
    end = max(r["t_end"] for r in records)
    samples = fresh = 0
    model: list[float] = []
    for (host, path), visits in by_page.items():
        visits.sort(key=lambda r: r["t_end"])
        clock = ChangeClock(spec.seed, host, path, RATES.get(path, 0.0), spec.epoch)
        times = [v["t_end"] for v in visits]
        t = start
        while t < end:
            i = bisect.bisect_right(times, t) - 1
            held = visits[i].get("v", 0) if i >= 0 else None
            fresh += held == clock.version_at(t)
            samples += 1
            t += 0.1
        in_window = sum(1 for x in times if start <= x <= end)
        model.append(freshness_at_frequency(clock.rate, in_window / (end - start)))
    fetches = sum(1 for r in records if r["t_start"] >= start)
    per_path: dict[str, int] = defaultdict(int)
    for r in records:
        if r["t_start"] >= start:
            per_path[r["path"]] += 1
    span = end - start
    return {
        "by_path": {p: round(n / span / len(spec.hosts), 3) for p, n in sorted(per_path.items())},
        "freshness": fresh / samples,
        "model": sum(model) / len(model),
        "fetches_per_s": fetches / (end - start),
        "pages": len(by_page),
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=100.0)
    parser.add_argument("--warmup", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=8.0, help="RECRAWL_INTERVAL (s)")
    parser.add_argument("--policies", default="", help="comma-separated labels' first words")
    return parser.parse_args()


def crawl_policies(args: argparse.Namespace, spec: WebSpec) -> dict[str, dict[str, Any]]:
    """measure() per chosen policy (uniform without cap always: the reference)."""
    base = {
        "FRONTIER_DELAY": 0.2,
        "RECRAWL_INTERVAL": args.interval,
        "RECRAWL_MIN_INTERVAL": 0.5,
        "RECRAWL_MAX_INTERVAL": 120.0,
        "RECRAWL_SCHEDULE_REFRESH": 2.0,
    }
    results: dict[str, dict[str, Any]] = {}
    work = Path(tempfile.mkdtemp(prefix="bench-freshness-"))
    try:
        chosen = [p for p in args.policies.split(",") if p]
        for label, settings in POLICIES:
            if chosen and label.split()[0] not in chosen and label != "uniform (no cap)":
                continue
            out = work / label.split()[0] / str(len(results))
            records = crawl(spec, out, {**base, **settings}, args.seconds)
            results[label] = measure(spec, records, args.warmup)
            print(f"  {label}: done ({len(records)} requests)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def print_results(results: dict[str, dict[str, Any]]) -> None:
    reference = results["uniform (no cap)"]["freshness"]
    rows = [
        [
            label,
            fmt(r["fetches_per_s"]),
            fmt(r["freshness"], ".3f"),
            fmt(r["model"], ".3f"),
            fmt(r["freshness"] / reference, ".2f"),
        ]
        for label, r in results.items()
    ]
    print(table(["policy", "fetches/s", "freshness", "model F", "vs uniform"], rows))
    print("fetches/s per page, by path:")
    for label, r in results.items():
        print(f"  {label}: {r['by_path']}")


def main() -> None:
    args = parse_args()
    spec = web_spec(args.hosts)
    docs = args.hosts * 6
    print(f"{docs} pages on {args.hosts} IPs; rates/s by path {RATES} (root, /page/5: 0)")
    print(
        f"budget: {docs} / {args.interval:g} s = {docs / args.interval:.2f} fetches/s; "
        f"{args.seconds:g} s per policy, measured after {args.warmup:g} s"
    )
    print_results(crawl_policies(args, spec))
    print(NOISE_NOTE)


if __name__ == "__main__":
    main()
