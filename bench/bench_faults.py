"""Faults injected into a crawl's Redis mid-crawl: what each one costs the crawl.

Run by hand from the project root (~4 min):

    .venv/bin/python bench/bench_faults.py [--after 6] [--outage 30] [--pause 20]
        [--delay 0.5] [--time-cap 300]

One `scrapy crawl web` of the demo web (WebSpec.demo(): 8 hosts, 157 real pages) per
run, on a redis-server of this script's own (REDIS_URL; AOF, fsync always, as a
deployment that cannot lose its frontier runs it):

- none: no fault, the baseline;
- restart: the server SIGKILLed `--after` s into the crawl and started again on its AOF
  `--outage` s later (a crash and a supervisor's restart);
- pause: the server stopped (SIGSTOP) `--after` s in for `--pause` s, then continued (a
  stalled host, a long fork for a snapshot).

Each row: whether the crawl ended by itself, real pages stored, stored pages with their
re-crawl state (recrawl/visits/new: a page without one is never revisited), the most
fetches in flight on one IP and the gaps shorter than the delay (from the test web's
request log), the crawl's wall time, and the Redis errors its frontier retried.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import NOISE_NOTE, table  # noqa: E402
from scripts.crawlrun import (  # noqa: E402
    CrawlResult,
    per_ip_violations,
    read_items,
    start_crawl,
    wait_crawl,
    write_seeds,
)
from scripts.testweb import TestWeb, WebSpec  # noqa: E402
from tests.integration.redis_cluster import LocalRedis  # noqa: E402
from tests.integration.test_gates import stats_of  # noqa: E402

AOF = ("--appendonly", "yes", "--appendfsync", "always")
FAULTS = ("none", "restart", "pause")


@dataclass
class Row:
    fault: str
    ended: bool
    stored: int
    real: int
    with_state: int
    in_flight: int
    short_gaps: int
    wall_s: float
    redis_errors: int

    def cells(self) -> list[object]:
        pages = f"{self.stored}/{self.real}"
        head = [self.fault, "yes" if self.ended else "no", pages, self.with_state]
        return [*head, self.in_flight, self.short_gaps, f"{self.wall_s:.1f}", self.redis_errors]


def inject(fault: str, server: LocalRedis, args: argparse.Namespace) -> None:
    """The fault, `args.after` s into the crawl (none: nothing)."""
    if fault == "none":
        return
    time.sleep(args.after)
    if fault == "restart":
        server.kill()
        time.sleep(args.outage)
        server.start()
        return
    server.pause()
    try:
        time.sleep(args.pause)
    finally:
        server.resume()


def run(fault: str, args: argparse.Namespace, work: Path) -> Row:
    server = LocalRedis(work / "redis", options=AOF).start()
    try:
        with TestWeb(WebSpec.demo(), lifetime=args.time_cap + 120) as web:
            seeds = write_seeds(work / "seeds.txt", web.seeds)
            settings = {
                "DNS_HOSTS_MAP": web.hosts_map_setting(),
                "FRONTIER_DELAY": args.delay,
                "REDIS_URL": server.url,
            }
            start = time.monotonic()
            proc = start_crawl(seeds, work / "data", settings, work / "items.jsonl")
            inject(fault, server, args)
            _, log = wait_crawl(proc, args.time_cap)
            wall = time.monotonic() - start
            requests, real = web.requests(), set(web.pages)
    finally:
        server.stop()
    (work / "crawl.log").write_text(log)
    stats = stats_of(CrawlResult(proc.returncode, "", log, []))
    in_flight, gaps = per_ip_violations(requests, args.delay, slack=0.005)
    stored = {item["url"] for item in read_items(work / "items.jsonl")}
    return Row(
        fault,
        stats.get("finish_reason") == "finished",
        len(stored & real),
        len(real),
        int(stats.get("recrawl/visits/new", 0)),
        in_flight,
        len(gaps),
        wall,
        int(stats.get("frontier/redis_errors", 0)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--after", type=float, default=6.0, help="s into the crawl")
    parser.add_argument("--outage", type=float, default=30.0, help="restart: s down")
    parser.add_argument("--pause", type=float, default=20.0, help="pause: s stopped")
    parser.add_argument("--delay", type=float, default=0.5, help="FRONTIER_DELAY")
    parser.add_argument("--time-cap", type=float, default=300.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    print(f"logs in {work}")
    rows = []
    for fault in FAULTS:
        print(f"{fault} ...", flush=True)
        rows.append(run(fault, args, work / fault))
    headers = ["fault", "ended by itself", "real pages stored", "stored with re-crawl state"]
    headers += ["max in flight per IP", f"gaps < {args.delay} s", "wall s", "Redis errors"]
    cells = [r.cells() for r in rows]
    print(table(headers, cells))
    print(f"restart: killed {args.after:g} s in, back {args.outage:g} s later on its AOF;")
    print(f"pause: SIGSTOP {args.after:g} s in for {args.pause:g} s")
    print(NOISE_NOTE)


if __name__ == "__main__":
    main()
