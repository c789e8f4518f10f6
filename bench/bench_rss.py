"""RSS of `scrapy crawl web` at several points of one crawl, and what grew between them.

    .venv/bin/python bench/bench_rss.py [--docs /usr/share/doc/postgresql-doc-15/html]
                                        [--at 300,1100] [--no-trace] [--project <tree>]

Issue 15 asks for RSS flat over a long crawl. bench_cpu.py gives peak RSS of whole
crawls of two lengths; this one crawls a real manual once (the same server, settings and
own redis-server as bench_cpu.py) with bench/_rss_probe.py loaded, which records at each
response count the current RSS (after a full gc), the gc object count by type, the size
of every container held by a live object or module, and a tracemalloc snapshot. It then
prints RSS per point and, from the first point to the last, the containers, object types
and allocation sites (tracemalloc, by traceback) that grew most. --no-trace leaves
tracemalloc off, for RSS figures without its overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, ROOT, redis_server, table
from bench_cpu import ADDRESS, HOST, ROOT_DOCS, _wait, docs_server

from crawlproj import settings as project_settings
from scripts.crawlrun import crawl_command

BENCH = Path(__file__).resolve().parent
MIB = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "traced_kib")  # KiB in the probe's records


def crawl(docs: Path, at: list[int], work: Path, trace: bool, project: Path) -> list[Any]:
    out = work / "probe.jsonl"
    settings = {
        "DNS_HOSTS_MAP": {HOST: ADDRESS},
        "FRONTIER_DELAY": 0,
        "CLOSESPIDER_PAGECOUNT": max(at) + 5,
        "URL_BLOCKLIST": r"re:/_sources/|\.txt$",
        "FRONTIER_DNS_RETRIES": 0,
        "EXTENSIONS": {**project_settings.EXTENSIONS, "_rss_probe.RssProbe": 900},
    }
    os.environ.update(
        RSS_PROBE_AT=",".join(map(str, at)),
        RSS_PROBE_OUT=str(out),
        RSS_PROBE_TRACE="1" if trace else "0",
        PYTHONPATH=str(BENCH),
    )
    with docs_server(docs) as (port, _), redis_server(work / "redis") as redis_url:
        settings["REDIS_URL"] = redis_url
        seeds = f"http://{HOST}:{port}/index.html"
        cmd = crawl_command(seeds, work / "data", settings, work / "items.jsonl")
        rc, usage = _wait(cmd, project, work / "crawl.log")
    if rc or not out.exists():
        sys.exit(f"crawl failed (rc {rc}): {(work / 'crawl.log').read_text()[-3000:]}")
    print(f"peak RSS of the whole crawl: {usage.ru_maxrss / 1024:.0f} MiB")
    return [json.loads(line) for line in out.read_text().splitlines()]


def grown(first: dict[str, int], last: dict[str, int], top: int) -> list[list[Any]]:
    delta = {k: last.get(k, 0) - first.get(k, 0) for k in set(first) | set(last)}
    rows = sorted(delta.items(), key=lambda kv: -kv[1])[:top]
    return [[k[-90:], first.get(k, 0), last.get(k, 0), d] for k, d in rows if d > 0]


def report(points: list[Any], work: Path, top: int) -> None:
    rows = [
        [p["responses"], *(p.get(k, 0) // 1024 for k in MIB), p.get("Threads", "")] for p in points
    ]
    print(table(["responses", "RSS MiB", "peak", "anon", "file", "traced", "threads"], rows))
    first, last = points[0], points[-1]
    span = f"{first['responses']} -> {last['responses']}"
    print(f"containers grown, {span}:")
    print(
        table(
            ["owner.attr", "len", "len", "+"], grown(first["containers"], last["containers"], top)
        )
    )
    print(f"gc objects by type, {span} (total {first['gc_objects']} -> {last['gc_objects']}):")
    print(table(["type", "n", "n", "+"], grown(first["types"], last["types"], top)))
    snaps = [work / f"probe.{p['responses']}.snap" for p in (first, last)]
    if all(s.exists() for s in snaps):
        old, new = (tracemalloc.Snapshot.load(str(s)) for s in snaps)
        print(f"allocation sites grown (tracemalloc), {span}:")
        for stat in new.compare_to(old, "traceback")[:top]:
            print(f"+{stat.size_diff / 1024:8.0f} KiB  +{stat.count_diff:7d} blocks")
            for line in stat.traceback.format()[-2 * 4 :]:
                print("      " + line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=ROOT_DOCS)
    parser.add_argument("--at", default="300,1100", help="response counts to snapshot at")
    parser.add_argument("--no-trace", action="store_true", help="tracemalloc off")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--project", type=Path, default=ROOT, help="a checkout to crawl with")
    parser.add_argument("--keep", type=Path, default=None, help="keep the work folder here")
    args = parser.parse_args()
    at = sorted(int(n) for n in args.at.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-rss-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        points = crawl(args.docs, at, work, not args.no_trace, args.project)
        report(points, work, args.top)
    print(NOISE_NOTE)


if __name__ == "__main__":
    main()
