"""Run `scrapy crawl web` as a real subprocess (tests, demo, benchmarks) against a
TestWeb, and measure politeness from the test web's request log."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SCRAPY = [sys.executable, "-m", "scrapy"]


@dataclass
class CrawlResult:
    returncode: int
    stdout: str
    stderr: str
    items: list[dict[str, Any]]

    @property
    def log(self) -> str:
        return self.stderr


def crawl_command(
    seeds: str | Path | None, data_dir: Path, settings: dict[str, Any], items: Path | None
) -> list[str]:
    """The `scrapy crawl web` command line; seeds None resumes the frontier."""
    cmd = [*SCRAPY, "crawl", "web"]
    if seeds is not None:
        cmd += ["-a", f"seeds={seeds}"]
    # DNS_HOSTS_MAP_ONLY: a sandboxed crawl never asks a real DNS server about a name.
    merged = {
        "CRAWL_DATA_DIR": str(data_dir),
        "LOG_LEVEL": "INFO",
        "DNS_HOSTS_MAP_ONLY": True,
        "DNS_ALLOWED_NETWORKS": "127.0.0.0/8",
        **settings,
    }
    for name, value in merged.items():
        text = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
        cmd += ["-s", f"{name}={text}"]
    if items is not None:
        cmd += ["-O", str(items)]
    return cmd


def start_crawl(
    seeds: str | Path | None,
    data_dir: Path,
    settings: dict[str, Any] | None = None,
    items: Path | None = None,
) -> subprocess.Popen[str]:
    """Start `scrapy crawl web` in the project root; the caller waits or kills it."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        crawl_command(seeds, data_dir, settings or {}, items),
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_crawl(
    seeds: str | Path | None,
    data_dir: Path,
    settings: dict[str, Any] | None = None,
    timeout: float = 240,
) -> CrawlResult:
    items = data_dir / "items.jsonl"
    proc = start_crawl(seeds, data_dir, settings, items)
    stdout, stderr = wait_crawl(proc, timeout)
    return CrawlResult(proc.returncode, stdout, stderr, read_items(items))


def wait_crawl(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """(stdout, stderr) of a started crawl; killed and reported if it outlives `timeout`."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        raise AssertionError(f"crawl did not finish in {timeout}s:\n{stderr[-4000:]}") from None


def read_items(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_seeds(path: Path, urls: Iterable[str]) -> Path:
    path.write_text("\n".join(urls) + "\n")
    return path


def per_ip_violations(records: Sequence[dict[str, Any]], delay: float, slack: float = 0.0):
    """(max in flight per IP, gaps below `delay`) from the server's request log.

    A gap is measured from the end of one response to the start of the next
    request on the same server address; `slack` absorbs clock granularity.
    """
    by_ip: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for rec in records:
        by_ip[rec["server_ip"]].append((rec["t_start"], rec["t_end"]))
    max_inflight, short_gaps = 0, []
    for ip, spans in by_ip.items():
        spans.sort()
        events = sorted(
            [(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda ev: (ev[0], ev[1])
        )
        level = 0
        for _, change in events:
            level += change
            max_inflight = max(max_inflight, level)
        for (_, prev_end), (start, _) in itertools.pairwise(spans):
            if start - prev_end < delay - slack:
                short_gaps.append((ip, round(start - prev_end, 4)))
    return max_inflight, short_gaps
