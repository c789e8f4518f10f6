"""Politeness and throughput of three schedulers on one skewed local web, side by side.

    .venv/bin/python bench/bench_politeness.py [--hosts 120 --pages 10 --skew 0.6
        --latency-ms 200 --delay 1.0 --concurrency 256 --schedulers stock,redis,ours]

Each scheduler crawls a fresh TestWeb built from the same WebSpec.many(...) spec (one
IP per host unless --ips is given; host sizes Zipf-skewed) with `scrapy crawl web`
and a fresh CRAWL_DATA_DIR:

  stock  Scrapy's scheduler, per-domain slots: DOWNLOAD_DELAY=<delay>,
         CONCURRENT_REQUESTS_PER_DOMAIN=1, default jitter (DOWNLOAD_DELAY_JITTER=0.5, what
         RANDOMIZE_DOWNLOAD_DELAY=True meant). Scrapy's delay is START-to-start.
  redis  scrapy-redis 0.9.1 scheduler + RFPDupeFilter on a redis-server started here,
         same DOWNLOAD_DELAY/jitter/per-domain concurrency as stock.
  ours   the project defaults (Redis frontier), FRONTIER_DELAY=<delay>: END-to-start.
  stock-matched (optional) stock with DOWNLOAD_DELAY=<fetch+delay> and no jitter: the
         start-to-start period equal to ours.

Politeness is measured from the test web's own request log (server-side times). The
politeness ceiling and its ratio are defined in the printed output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, CrawlRun, Politeness, analyse, crawl, redis_server
from _gap_trace import decompose
from _politeness_report import (
    Setup,
    print_definitions,
    print_losses,
    print_throughput,
    print_timeline,
)

from scripts.testweb import WebSpec

SCHEDULERS = ("stock", "redis", "ours", "stock-matched")


def settings_for(name: str, args: argparse.Namespace, redis_url: str | None) -> dict[str, Any]:
    common = {
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        # Safety net only: each crawl is expected to finish by itself long before.
        "CLOSESPIDER_TIMEOUT": args.max_crawl_s,
    }
    if name == "stock":
        return {
            **common,
            "SCHEDULER": "scrapy.core.scheduler.Scheduler",
            "DOWNLOAD_DELAY": args.delay,
        }
    if name == "stock-matched":
        return {
            **common,
            "SCHEDULER": "scrapy.core.scheduler.Scheduler",
            "DOWNLOAD_DELAY": args.latency_ms / 1000 + args.delay,
            "DOWNLOAD_DELAY_JITTER": 0,
        }
    if name == "redis":
        assert redis_url is not None
        return {
            **common,
            "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
            "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
            "REDIS_URL": redis_url,
            "DOWNLOAD_DELAY": args.delay,
            # 0 (the default) = non-blocking pop; the plain `web` spider then closes
            # when the queue is empty and nothing is in flight.
            "SCHEDULER_IDLE_BEFORE_CLOSE": 0,
        }
    if name == "ours":
        ours = {**common, "FRONTIER_DELAY": args.delay}
        if args.trace:
            ours["SCHEDULER"] = "bench._trace_scheduler.TracingScheduler"
        return ours
    raise ValueError(name)


def describe(name: str, args: argparse.Namespace) -> str:
    return {
        "stock": f"Scrapy Scheduler, DOWNLOAD_DELAY={args.delay} start-to-start, jitter +-50%",
        "redis": f"scrapy-redis Scheduler+RFPDupeFilter, DOWNLOAD_DELAY={args.delay} "
        "start-to-start, jitter +-50%",
        "ours": f"Redis frontier (project defaults), FRONTIER_DELAY={args.delay} end-to-start",
        "stock-matched": "Scrapy Scheduler, DOWNLOAD_DELAY="
        f"{args.latency_ms / 1000 + args.delay:g} start-to-start, no jitter",
    }[name]


def parse_args() -> tuple[argparse.Namespace, list[str]]:
    """The arguments and the schedulers they name (an unknown one is a usage error)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=120, help="hosts (one IP each by default)")
    parser.add_argument("--pages", type=int, default=10, help="mean pages per host")
    parser.add_argument("--ips", type=int, default=None, help="IPs (default: one per host)")
    parser.add_argument("--latency-ms", type=float, default=200.0, help="server fetch time")
    parser.add_argument("--skew", type=float, default=0.6, help="Zipf exponent of host sizes")
    parser.add_argument("--delay", type=float, default=1.0, help="politeness delay (s)")
    parser.add_argument("--concurrency", type=int, default=256, help="CONCURRENT_REQUESTS")
    parser.add_argument(
        "--schedulers", default="stock,redis,ours", help=f"comma list of {','.join(SCHEDULERS)}"
    )
    parser.add_argument("--max-crawl-s", type=int, default=240, help="CLOSESPIDER_TIMEOUT net")
    parser.add_argument("--window", type=float, default=10.0, help="early-rate window (s)")
    parser.add_argument("--bin", type=float, default=10.0, help="timeline bin (s); 0 = none")
    parser.add_argument("--out", default=None, help="output folder (default: a new temp dir)")
    parser.add_argument(
        "--trace",
        action="store_true",
        help="run ours under bench/_trace_scheduler.py and decompose its excess gaps",
    )
    args = parser.parse_args()
    names = [n.strip() for n in args.schedulers.split(",") if n.strip()]
    bad = [n for n in names if n not in SCHEDULERS]
    if bad:
        parser.error(f"unknown scheduler {bad[0]!r}")
    return args, names


def print_web(spec: WebSpec, args: argparse.Namespace, n_ips: int, out: Path) -> None:
    sizes = sorted((h.pages for h in spec.hosts), reverse=True)
    print(
        f"bench_politeness: WebSpec.many({args.hosts}, {args.pages}, ips={args.ips}, "
        f"latency_ms={args.latency_ms:g}, skew={args.skew:g}): {sum(sizes)} pages on "
        f"{args.hosts} hosts / {n_ips} IPs; host sizes max {sizes[0]}, median "
        f"{sizes[len(sizes) // 2]}, min {sizes[-1]} (top 5: {sizes[:5]})"
    )
    print(
        f"delay {args.delay:g}s, fetch {args.latency_ms / 1000:g}s, "
        f"CONCURRENT_REQUESTS={args.concurrency}; outputs in {out}"
    )
    print(NOISE_NOTE)


def crawl_with(name: str, args: argparse.Namespace, spec: WebSpec, out: Path) -> CrawlRun:
    """One crawl with scheduler `name` (redis: on a redis-server of its own)."""
    print(f"... crawling with {name}: {describe(name, args)}", flush=True)
    timeout = args.max_crawl_s + 90
    if name == "redis":
        with redis_server(out / name / "redis-server") as url:
            run = crawl(name, spec, out / name, settings_for(name, args, url), timeout)
    else:
        if name == "ours" and args.trace:
            trace = out / name / "scheduler-trace.jsonl"
            trace.parent.mkdir(parents=True, exist_ok=True)
            trace.unlink(missing_ok=True)
            os.environ["BENCH_TRACE_FILE"] = str(trace)
        run = crawl(name, spec, out / name, settings_for(name, args, None), timeout)
    print(
        f"    done in {run.wall_s:.1f}s wall (rc {run.returncode}, reason {run.reason}, "
        f"{len(run.records)} requests logged)",
        flush=True,
    )
    return run


def write_summary(pols: dict[str, Politeness], path: Path) -> None:
    summary = {
        name: {
            "requests": pol.pages,
            "robots": pol.robots,
            "span_s": pol.span,
            "ceiling_ratio": pol.ceiling_ratio,
            "max_inflight": pol.max_inflight,
            "overlaps": pol.overlaps,
            "short_gaps": pol.short_gaps(),
            "gaps": len(pol.all_gaps),
        }
        for name, pol in pols.items()
    }
    path.write_text(json.dumps(summary, indent=2))


def report(runs: dict[str, CrawlRun], args: argparse.Namespace, setup: Setup, out: Path) -> None:
    pols = {name: analyse(run.records, args.delay) for name, run in runs.items()}
    print_throughput(pols, runs, setup)
    print_definitions(pols, setup)
    print_losses(pols, args.delay)
    if args.bin > 0:
        print_timeline(pols, args.bin)
    if args.trace and "ours" in runs:
        print()
        print(decompose(runs["ours"], args.delay))
    print()
    for name, run in runs.items():
        if run.returncode != 0:
            print(f"WARNING: {name} exited with {run.returncode}: {run.log_tail[-800:]}")
    write_summary(pols, out / "results.json")


def main() -> int:
    args, names = parse_args()
    spec = WebSpec.many(
        args.hosts, args.pages, ips=args.ips, latency_ms=args.latency_ms, skew=args.skew
    )
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-politeness-"))
    out.mkdir(parents=True, exist_ok=True)
    n_ips = len({h.group for h in spec.hosts})
    print_web(spec, args, n_ips, out)
    started = time.monotonic()
    runs = {name: crawl_with(name, args, spec, out) for name in names}
    total = time.monotonic() - started
    report(runs, args, Setup(args.delay, args.latency_ms / 1000, n_ips, args.window), out)
    print(f"total bench time {total:.0f}s; per-crawl logs and request logs under {out}")
    print(NOISE_NOTE)
    return 0 if all(r.returncode == 0 for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
