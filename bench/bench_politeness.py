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
import bisect
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    NOISE_NOTE,
    CrawlRun,
    Politeness,
    analyse,
    crawl,
    fmt,
    median,
    percentile,
    redis_server,
    table,
)

from scripts.testweb import WebSpec

SCHEDULERS = ("stock", "redis", "ours", "stock-matched")


def settings_for(name: str, args: argparse.Namespace, redis_url: str | None) -> dict:
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


def decompose(run: CrawlRun, delay: float) -> str:
    """Split each end-to-start gap of ours into the steps between them (--trace).

    gap - delay = (client 'done' stamp - server end)      response seen late by the crawler
                + (lease sent - (done stamp + delay))     IP due, nobody asked the frontier
                + (lease returned - lease sent)           lease round trip incl. event loop
                + (handed to engine - lease returned)     waiting in the scheduler's buffer
                + (server start - handed to engine)       downloader / connection / request
    """
    path = run.out / "scheduler-trace.jsonl"
    if not path.exists():
        return "(no scheduler trace)"
    trace = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    done = {(e["ip"], e["url"]): e["t"] for e in trace if e["ev"] == "done"}
    dispatch = {(e["ip"], e["url"]): e["t"] for e in trace if e["ev"] == "dispatch"}
    leases_by_ip: dict[str, list[tuple[float, float]]] = {}
    for e in trace:
        if e["ev"] == "lease" and e.get("ips"):
            for ip in e["ips"]:
                leases_by_ip.setdefault(ip, []).append((e["t"], e["sent"]))
    by_ip: dict[str, list[dict]] = {}
    for rec in run.records:
        by_ip.setdefault(rec["server_ip"], []).append(rec)
    parts: list[tuple[float, ...]] = []
    for ip, recs in by_ip.items():
        recs.sort(key=lambda r: r["t_start"])
        returns = sorted(leases_by_ip.get(ip, []))
        keys = [t for t, _ in returns]
        for prev, cur in itertools.pairwise(recs):
            stamp = done.get((ip, prev["url"]))
            handed = dispatch.get((ip, cur["url"]))
            k = bisect.bisect_right(keys, handed if handed is not None else cur["t_start"]) - 1
            if stamp is None or handed is None or k < 0:
                continue  # robots.txt hops report their end themselves: not traced here
            returned, sent = returns[k]
            due = stamp + delay
            parts.append(
                (
                    cur["t_start"] - prev["t_end"] - delay,
                    stamp - prev["t_end"],
                    sent - due,
                    returned - sent,
                    handed - returned,
                    cur["t_start"] - handed,
                )
            )
    if not parts:
        return "(no traced gaps)"
    names = [
        "excess (gap-delay)",
        "done stamp lag",
        "due -> lease sent",
        "lease round trip",
        "buffer -> engine",
        "engine -> server start",
    ]
    rows = []
    for label, subset in (
        ("all traced gaps", parts),
        ("gaps with excess > 0.1 s", [p for p in parts if p[0] > 0.1]),
    ):
        if not subset:
            continue
        for i, name in enumerate(names):
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
    head = (
        "== ours: where the excess over the delay went (scheduler trace; "
        "client clock = server clock, same host) =="
    )
    return head + "\n" + table(["gaps", "component", "n", "sum s", "p50", "p90", "max"], rows)


def main() -> int:
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

    spec = WebSpec.many(
        args.hosts, args.pages, ips=args.ips, latency_ms=args.latency_ms, skew=args.skew
    )
    sizes = sorted((h.pages for h in spec.hosts), reverse=True)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-politeness-"))
    out.mkdir(parents=True, exist_ok=True)
    fetch = args.latency_ms / 1000
    n_ips = len({h.group for h in spec.hosts})
    print(
        f"bench_politeness: WebSpec.many({args.hosts}, {args.pages}, ips={args.ips}, "
        f"latency_ms={args.latency_ms:g}, skew={args.skew:g}): {sum(sizes)} pages on "
        f"{args.hosts} hosts / {n_ips} IPs; host sizes max {sizes[0]}, median "
        f"{sizes[len(sizes) // 2]}, min {sizes[-1]} (top 5: {sizes[:5]})"
    )
    print(
        f"delay {args.delay:g}s, fetch {fetch:g}s, CONCURRENT_REQUESTS={args.concurrency}; "
        f"outputs in {out}"
    )
    print(NOISE_NOTE)
    runs: dict[str, CrawlRun] = {}
    started = time.monotonic()
    crawl_timeout = args.max_crawl_s + 90
    for name in names:
        print(f"... crawling with {name}: {describe(name, args)}", flush=True)
        if name == "redis":
            with redis_server(out / name / "redis-server") as url:
                runs[name] = crawl(
                    name, spec, out / name, settings_for(name, args, url), crawl_timeout
                )
        else:
            if name == "ours" and args.trace:
                trace = out / name / "scheduler-trace.jsonl"
                trace.parent.mkdir(parents=True, exist_ok=True)
                trace.unlink(missing_ok=True)
                os.environ["BENCH_TRACE_FILE"] = str(trace)
            runs[name] = crawl(
                name, spec, out / name, settings_for(name, args, None), crawl_timeout
            )
        run = runs[name]
        print(
            f"    done in {run.wall_s:.1f}s wall (rc {run.returncode}, reason {run.reason}, "
            f"{len(run.records)} requests logged)",
            flush=True,
        )
    total = time.monotonic() - started

    pols = {name: analyse(run.records, args.delay) for name, run in runs.items()}
    start_ceiling = n_ips / (fetch + args.delay)
    rows = []
    for name, pol in pols.items():
        run = runs[name]
        pages_s = (pol.pages - pol.robots) / pol.span if pol.span else float("nan")
        early = pol.starts_within(args.window) / args.window
        fetched = {
            r["url"]
            for r in run.records
            if r.get("status") == 200 and r.get("path") != "/robots.txt"
        }
        rows.append(
            [
                name,
                f"{pol.pages} ({pol.robots})",
                f"{len(fetched)}/{run.expected_pages}",
                fmt(pol.span, ".1f"),
                fmt(run.wall_s, ".1f"),
                fmt(pages_s),
                fmt(pages_s / start_ceiling, ".3f"),
                fmt(early, ".1f"),
                fmt(early / start_ceiling, ".3f"),
                fmt(pol.ceiling_ratio, ".3f"),
                f"{pol.max_inflight}",
                f"{pol.overlaps}",
                f"{pol.short_gaps()}/{len(pol.all_gaps)}",
                fmt(min(pol.all_gaps, default=float("nan")), ".3f"),
                fmt(median(pol.all_gaps), ".3f"),
            ]
        )
    print()
    print("== Throughput and politeness (server-side request log) ==")
    print(
        table(
            [
                "scheduler",
                "requests (robots)",
                "pages ok/expected",
                "span s",
                "wall s",
                "pages/s",
                "/start ceil",
                f"first {args.window:g}s /s",
                "/start ceil",
                "ceiling ratio",
                "max inflight/IP",
                "overlaps",
                "gaps<delay",
                "min gap",
                "median gap",
            ],
            rows,
        )
    )
    print()
    print("Definitions:")
    print(
        "  span = last response end - first request start (server log); pages/s = "
        "requests other than /robots.txt / span; wall = whole `scrapy crawl` process."
    )
    print("  'first Ns /s' = requests started in the first N seconds after the first fetch / N.")
    print(
        f"  start ceiling = IPs with work at the start / (fetch + delay) = {n_ips} / "
        f"({fetch:g} + {args.delay:g}) = {start_ceiling:.1f} pages/s (every IP has its seed)."
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
        f"the delay ({args.delay:g}s, no slack), all counted."
    )
    print(
        "  stock/redis pace START-to-start (Scrapy's DOWNLOAD_DELAY, +-50% jitter), so their "
        "end-to-start gaps are ~delay*U(0.5,1.5) - fetch: short gaps are by design."
    )

    print()
    print("== Where each scheduler lost time against the ceiling ==")
    print(
        "  sum_i actual_T_i - sum_i ideal_T_i = sum of start lags (first fetch of IP i - t0)"
        " + sum of (gap - delay) over all gaps"
    )
    rows = []
    for name, pol in pols.items():
        ideal = sum(pol.ideal(s) for s in pol.ips.values())
        actual = sum(pol.actual(s) for s in pol.ips.values())
        excess = [g - args.delay for g in pol.all_gaps if g > args.delay]
        lags = sorted(s.first_start - pol.t0 for s in pol.ips.values())
        rows.append(
            [
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
        )
    print(
        table(
            [
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
            ],
            rows,
        )
    )
    print()
    print("  Top IPs by lost time (actual_T - ideal_T), per scheduler:")
    for name, pol in pols.items():
        worst = sorted(pol.ips.values(), key=lambda s: pol.ideal(s) - pol.actual(s))[:3]
        desc = ", ".join(
            f"{s.ip} n={s.n} lost {pol.actual(s) - pol.ideal(s):.1f}s "
            f"(lag {s.first_start - pol.t0:.1f}s, excess gaps "
            f"{sum(max(0.0, g - args.delay) for g in s.gaps):.1f}s)"
            for s in worst
        )
        print(f"    {name}: {desc}")
    if args.bin > 0:
        print()
        print(
            f"== Timeline: fetch starts per second and IPs between first and last fetch, "
            f"per {args.bin:g}s bin =="
        )
        print(timeline(pols, args.bin))
    if args.trace and "ours" in runs:
        print()
        print(decompose(runs["ours"], args.delay))
    print()
    for name, run in runs.items():
        if run.returncode != 0:
            print(f"WARNING: {name} exited with {run.returncode}: {run.log_tail[-800:]}")
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
    (out / "results.json").write_text(json.dumps(summary, indent=2))
    print(f"total bench time {total:.0f}s; per-crawl logs and request logs under {out}")
    print(NOISE_NOTE)
    return 0 if all(r.returncode == 0 for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
