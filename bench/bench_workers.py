"""Throughput with 1, 2 and 4 worker processes sharing one Redis, politeness not binding.

    .venv/bin/python bench/bench_workers.py [--hosts 200 --pages 20 --workers 1,2,4]

For each worker count: a fresh test web (WebSpec.many: one IP per host), a fresh
redis-server of our own, and N `scrapy crawl web` processes started together with the
same REDIS_URL (one crawl, one frontier; the project's embedded-Redis configuration, AOF on, started
here and stopped at the end), FRONTIER_DELAY=0, each with its own
CRAWL_DATA_DIR. Pages/s is measured on the server's request log (first request start to
last response end: process start-up is not counted; wall time is shown too), as a ratio
to one worker. Redis CPU per 1,000 pages is the INFO cpu delta (used_cpu_sys +
used_cpu_user) over the run. Correctness is checked on the way: every page fetched once
and at most one request in flight per IP across all workers (DESIGN invariant 1).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
from _common import NOISE_NOTE, analyse, fmt, redis_server, table

from scripts.crawlrun import start_crawl, write_seeds
from scripts.testweb import TestWeb, WebSpec


def redis_cpu_s(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def run_workers(n: int, spec: WebSpec, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    limit = args.max_crawl_s
    with (
        TestWeb(spec, log_path=out / "testweb-requests.jsonl", lifetime=limit + 120) as web,
        redis_server(out / "redis") as url,
    ):
        seeds = write_seeds(out / "seeds.txt", web.seeds)
        client = redis.Redis.from_url(url)
        cpu_before = redis_cpu_s(client)
        started = time.monotonic()
        procs = [start_crawl(seeds, out / f"w{i}", _settings(web, url, out, i, args), None)
                 for i in range(n)]  # fmt: skip
        codes = [_wait(p, limit + 60) for p in procs]
        wall = time.monotonic() - started
        redis_cpu = redis_cpu_s(client) - cpu_before
        client.close()
        records = web.requests()
        expected = set(web.pages)
    pol = analyse(records, 0.0)
    pages = [r["url"] for r in records if r.get("path") != "/robots.txt"]
    fetched_twice = sum(1 for c in Counter(pages).values() if c > 1)
    return {
        "workers": n,
        "pages": len(pages),
        "missing": len(expected - set(pages)),
        "twice": fetched_twice,
        "span": pol.span,
        "wall": wall,
        "pages_s": len(pages) / pol.span if pol.span else float("nan"),
        "wall_pages_s": len(pages) / wall,
        "redis_ms_per_1k": 1e6 * redis_cpu / len(pages) if pages else float("nan"),
        "max_inflight": pol.max_inflight,
        "codes": codes,
    }


def _settings(web: TestWeb, url: str, out: Path, i: int, args: argparse.Namespace) -> dict:
    return {
        "REDIS_URL": url,
        "DNS_HOSTS_MAP": web.hosts_map_setting(),
        "FRONTIER_DELAY": 0,
        "CONCURRENT_REQUESTS": args.concurrency,
        "CLOSESPIDER_TIMEOUT": args.max_crawl_s,
        # Logs to a file: N chatty workers on pipes nobody reads would block.
        "LOG_FILE": str(out / f"w{i}.log"),
    }


def _wait(proc: Any, timeout: float) -> int:
    try:
        proc.communicate(timeout=timeout)
    except Exception:  # TimeoutExpired: our own child, stopped by PID
        proc.kill()
        proc.communicate()
        return -9
    return int(proc.returncode)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200, help="hosts, one IP each")
    parser.add_argument("--pages", type=int, default=20, help="pages per host")
    parser.add_argument("--workers", default="1,2,4", help="worker counts to compare")
    parser.add_argument("--concurrency", type=int, default=64, help="CONCURRENT_REQUESTS")
    parser.add_argument("--max-crawl-s", type=int, default=300, help="per-run time limit")
    parser.add_argument("--out", default=None, help="output folder (default: a new temp dir)")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    spec = WebSpec.many(args.hosts, args.pages)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-workers-"))
    print(
        f"bench_workers: WebSpec.many({args.hosts}, {args.pages}) on {args.hosts} IPs, delay 0, "
        f"CONCURRENT_REQUESTS={args.concurrency} per worker; workers {counts}; outputs in {out}"
    )
    print(NOISE_NOTE)
    results = []
    for n in counts:
        row = run_workers(n, spec, out / f"workers-{n}", args)
        results.append(row)
        print(
            f"  {n} worker(s): {row['pages']} pages in {row['span']:.2f}s span "
            f"({row['wall']:.2f}s wall), {row['pages_s']:.1f} pages/s, exit codes {row['codes']}",
            flush=True,
        )
    print_table(results)
    return 0 if all(c == 0 for r in results for c in r["codes"]) else 1


def print_table(results: list[dict[str, Any]]) -> None:
    base = results[0]
    rows = [
        [
            r["workers"],
            f"{r['pages']} ({r['missing']} missing, {r['twice']} twice)",
            fmt(r["span"], ".2f"),
            fmt(r["pages_s"], ".1f"),
            fmt(r["pages_s"] / base["pages_s"], ".2f"),
            fmt(r["wall_pages_s"], ".1f"),
            fmt(r["wall_pages_s"] / base["wall_pages_s"], ".2f"),
            fmt(r["redis_ms_per_1k"], ".1f"),
            r["max_inflight"],
        ]
        for r in results
    ]
    headers = ["workers", "pages", "span s", "pages/s", "ratio", "pages/s (wall)", "ratio (wall)",
               "Redis CPU ms/1k pages", "max in flight/IP"]  # fmt: skip
    print()
    print(table(headers, rows))


if __name__ == "__main__":
    sys.exit(main())
