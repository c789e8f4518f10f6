"""The frontier's own cost where politeness does not bind: ours vs Scrapy's stock scheduler.

    .venv/bin/python bench/bench_frontier_cost.py [--hosts 200 --pages 20 --repeats 3]

Many IPs (one per host), latency 0, delay 0 on both sides, one request in flight per
IP on both sides (CONCURRENT_REQUESTS_PER_DOMAIN=1; the frontier's
FRONTIER_IP_CONCURRENCY=1), the same CONCURRENT_REQUESTS. What differs is the
scheduler: Scrapy's in-memory scheduler (DownloaderAwarePriorityQueue, no Redis) vs the
Redis frontier (embedded redis-server, Lua admit/lease/report, the project defaults).
Runs alternate stock/ours; the median of the repeats is reported.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, CrawlRun, analyse, crawl, fmt, median, table

from scripts.testweb import WebSpec

Row = dict[str, float]  # one crawl's figures


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200, help="hosts, one IP each")
    parser.add_argument("--pages", type=int, default=20, help="pages per host")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="server fetch time")
    parser.add_argument("--concurrency", type=int, default=256, help="CONCURRENT_REQUESTS")
    parser.add_argument("--repeats", type=int, default=3, help="crawls per scheduler")
    parser.add_argument("--max-crawl-s", type=int, default=180, help="per-crawl time limit")
    parser.add_argument("--out", default=None, help="output folder (default: a new temp dir)")
    return parser.parse_args()


def scheduler_settings(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    common = {
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "CLOSESPIDER_TIMEOUT": args.max_crawl_s,
    }
    return {
        "stock": {**common, "SCHEDULER": "scrapy.core.scheduler.Scheduler", "DOWNLOAD_DELAY": 0},
        "ours": {**common, "FRONTIER_DELAY": 0, "DOWNLOAD_DELAY": 0},
    }


def measure(run: CrawlRun) -> Row:
    """One crawl's throughput and cost from the test web's log and the process's rusage."""
    pol = analyse(run.records, 0.0)
    ok = sum(1 for r in run.records if r.get("status") == 200 and r.get("path") != "/robots.txt")
    pages = pol.pages - pol.robots  # robots.txt fetches (if any) not counted as pages
    return {
        "requests": pol.pages,
        "robots": pol.robots,
        "ok": ok,
        "expected": run.expected_pages,
        "span": pol.span,
        "wall": run.wall_s,
        "cpu": run.cpu_s,
        "pages_s": pages / pol.span if pol.span else float("nan"),
        "wall_pages_s": pages / run.wall_s,
        "cpu_ms_page": 1000 * run.cpu_s / pages if pages else float("nan"),
        "max_inflight": pol.max_inflight,
        "rc": run.returncode,
    }


def print_run(rep: int, name: str, row: Row) -> None:
    print(
        f"  run {rep + 1} {name:5s}: {row['requests']} requests ({row['robots']} robots.txt, "
        f"{row['ok']}/{row['expected']} ok) "
        f"in {row['span']:.2f}s span / {row['wall']:.2f}s wall = {row['pages_s']:.1f} "
        f"pages/s (span), {row['cpu_ms_page']:.2f} CPU ms/page, max "
        f"{row['max_inflight']} in flight per IP, rc {row['rc']}",
        flush=True,
    )


def crawl_all(args: argparse.Namespace, spec: WebSpec, out: Path) -> dict[str, list[Row]]:
    """--repeats crawls per scheduler, alternating which goes first."""
    configs = scheduler_settings(args)
    results: dict[str, list[Row]] = {name: [] for name in configs}
    for rep in range(args.repeats):
        order = list(configs) if rep % 2 == 0 else list(reversed(configs))
        for name in order:
            run = crawl(name, spec, out / f"{name}-{rep + 1}", configs[name], args.max_crawl_s + 60)
            results[name].append(measure(run))
            print_run(rep, name, results[name][-1])
    return results


def summary_rows(results: dict[str, list[Row]]) -> list[list[str]]:
    def med(name: str, key: str) -> float:
        return median([r[key] for r in results[name]])

    def ratio(key: str) -> str:
        return fmt(med("ours", key) / med("stock", key), ".3f")

    rows = [
        [
            name,
            f"{med(name, 'requests'):.0f} ({med(name, 'robots'):.0f})",
            fmt(med(name, "span"), ".2f"),
            fmt(med(name, "pages_s"), ".1f"),
            " ".join(f"{r['pages_s']:.0f}" for r in results[name]),
            fmt(med(name, "wall"), ".2f"),
            fmt(med(name, "wall_pages_s"), ".1f"),
            fmt(med(name, "cpu_ms_page"), ".2f"),
        ]
        for name in results
    ]
    keys = ("span", "pages_s", "", "wall", "wall_pages_s", "cpu_ms_page")
    rows.append(["ours/stock", "", *(ratio(key) if key else "" for key in keys)])
    return rows


HEADERS = [
    "scheduler",
    "requests (robots)",
    "span s",
    "pages/s (span)",
    "per run",
    "wall s",
    "pages/s (wall)",
    "CPU ms/page",
]


def print_summary(results: dict[str, list[Row]], repeats: int) -> None:
    print()
    print(f"== Frontier cost, politeness not binding (median of {repeats}) ==")
    print(table(HEADERS, summary_rows(results)))
    print()
    print(
        "  span = first request start -> last response end in the test web's log (excludes "
        "process start/stop); wall = the whole `scrapy crawl` process, including (ours) "
        "starting and stopping the embedded redis-server."
    )
    print("  pages = requests other than /robots.txt.")
    print(
        "  CPU ms/page = user+sys CPU of the scrapy process and its children (the embedded "
        "Redis for ours), per request; less sensitive to other load than wall time."
    )
    speed = median([r["pages_s"] for r in results["ours"]]) / median(
        [r["pages_s"] for r in results["stock"]]
    )
    print(f"  target: ours/stock pages/s (span) >= 0.9 -> {speed:.3f}")


def main() -> int:
    args = parse_args()
    spec = WebSpec.many(args.hosts, args.pages, latency_ms=args.latency_ms)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-cost-"))
    print(
        f"bench_frontier_cost: WebSpec.many({args.hosts}, {args.pages}, "
        f"latency_ms={args.latency_ms:g}): {args.hosts * args.pages} pages + {args.hosts} roots "
        f"on {args.hosts} IPs; delay 0; CONCURRENT_REQUESTS={args.concurrency}, 1 per IP; "
        f"{args.repeats} runs each, alternating; outputs in {out}"
    )
    print(NOISE_NOTE)
    started = time.monotonic()
    results = crawl_all(args, spec, out)
    total = time.monotonic() - started
    print_summary(results, args.repeats)
    print(f"total bench time {total:.0f}s; logs under {out}")
    print(NOISE_NOTE)
    return 0 if all(r["rc"] == 0 for rs in results.values() for r in rs) else 1


if __name__ == "__main__":
    sys.exit(main())
