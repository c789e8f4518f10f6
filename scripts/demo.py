"""End-to-end demo: start the bundled test web, crawl it with `scrapy crawl web`,
print a summary; then re-visit one host with conditional GETs (`scrapy recrawl`).
Only 127.x addresses are contacted; everything stops by itself.

    ./scripts/demo            # or: .venv/bin/python -m scripts.demo [--delay 0.5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from scripts.crawlrun import SCRAPY, crawl_command, per_ip_violations, read_items
from scripts.testweb import TestWeb, WebSpec

ROOT = Path(__file__).resolve().parents[1]
REVISIT_HOST = "theta.test"  # the demo host with ETag/Last-Modified and changing pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.5, help="FRONTIER_DELAY (s)")
    parser.add_argument("--out", default=str(ROOT / ".crawl" / "demo"), help="output folder")
    args = parser.parse_args(argv)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)  # a demo always starts from an empty frontier
    out.mkdir(parents=True)
    with TestWeb(WebSpec.demo(), log_path=out / "testweb-requests.jsonl", lifetime=600) as web:
        seeds = out / "seeds.txt"
        seeds.write_text("\n".join(web.seeds) + "\n")
        settings = {
            "DNS_HOSTS_MAP": web.hosts_map_setting(),
            "FRONTIER_DELAY": args.delay,
            "CRAWL_SUMMARY_FILE": str(out / "summary.json"),
            "LOG_FILE": str(out / "crawl.log"),
        }
        print(
            f"demo: test web on port {web.port}: {len(web.hosts)} hosts on "
            f"{len(set(web.hosts.values()))} IPs; crawling (log: {out / 'crawl.log'})"
        )
        started = time.monotonic()
        cmd = crawl_command(seeds, out / "data", settings, out / "items.jsonl")
        proc = subprocess.run(cmd, cwd=ROOT, check=False)
        elapsed = time.monotonic() - started
        requests = web.requests()
        expected = set(web.pages)
        rc = report(out, proc.returncode, elapsed, requests, expected, args.delay)
        if rc == 0:
            rc = revisit(out, settings, web, len(requests))
    return rc


def revisit(out: Path, settings: dict, web: TestWeb, before: int) -> int:
    """Freshness: `scrapy recrawl --host theta.test`, then a crawl without seeds
    re-visits its pages with conditional GETs and ends by itself."""
    host = REVISIT_HOST
    data = ["-s", f"CRAWL_DATA_DIR={out / 'data'}", "-s", "LOG_LEVEL=WARNING"]
    marked = subprocess.run(
        [*SCRAPY, "recrawl", "--host", host, *data], cwd=ROOT, capture_output=True, text=True
    )
    if marked.returncode != 0:
        print(marked.stderr.strip())
        return marked.returncode
    settings = {**settings, "LOG_FILE": str(out / "revisit.log")}
    settings["CRAWL_SUMMARY_FILE"] = str(out / "revisit-summary.json")
    cmd = crawl_command(None, out / "data", settings, out / "revisit.jsonl")
    proc = subprocess.run(cmd, cwd=ROOT, check=False)
    requests = [r for r in web.requests()[before:] if r["path"] != "/robots.txt"]
    rows = read_items(out / "revisit.jsonl")
    statuses = Counter(r["status"] for r in requests)
    changes = Counter(r.get("change") for r in rows)
    print(f"\n== re-visit of {host} (scrapy recrawl --host {host}; scrapy crawl web) ==")
    print(f"requests:   {len(requests)}, {sum(1 for r in requests if r.get('inm'))} conditional")
    print(f"answers:    {dict(sorted(statuses.items()))}")
    print(f"rows:       {dict(sorted(changes.items()))} (not_modified/unchanged: not stored again)")
    print(f"items:      {out / 'revisit.jsonl'}")
    return proc.returncode


def report(out: Path, rc: int, elapsed: float, requests: list, expected: set, delay: float) -> int:
    items = read_items(out / "items.jsonl")
    summary = (
        json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    )
    fetched = {r["url"] for r in requests}
    max_inflight, short_gaps = per_ip_violations(requests, delay)
    errors = sum(1 for i in items if i.get("status", 200) >= 400) + summary.get("errors", 0)
    print("\n== crawl summary ==")
    print(f"pages:      {len(items)} items ({len(expected & fetched)}/{len(expected)} real pages)")
    print(f"hosts:      {len({i['final_url'].split('/')[2] for i in items})}")
    print(f"errors:     {errors}")
    print(f"elapsed:    {elapsed:.1f}s (crawl reason: {summary.get('reason', '?')})")
    print(f"politeness: max {max_inflight} in flight per IP, {len(short_gaps)} gaps < {delay}s")
    print(f"items:      {out / 'items.jsonl'}")
    print(f"report:     {out / 'items-report.html'}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
