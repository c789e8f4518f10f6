"""End-to-end demo: start the bundled test web, crawl it with `scrapy crawl web`,
print a summary. Only 127.x addresses are contacted; everything stops by itself.

    ./scripts/demo            # or: .venv/bin/python -m scripts.demo [--delay 0.5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from scripts.crawlrun import crawl_command, per_ip_violations, read_items
from scripts.testweb import TestWeb, WebSpec

ROOT = Path(__file__).resolve().parents[1]


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
    return report(out, proc.returncode, elapsed, requests, expected, args.delay)


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
