"""The cost curve: does a queued URL cost the same at 20 M URLs as at 1 M?

    .venv/bin/python bench/bench_scale.py [--sizes 1e6,5e6,20e6 --ips 100000]
    .venv/bin/python bench/bench_scale.py --quick      # 50k, 250k, 1M over 10,000 IPs

Why: bench_frontier_ops.py measures 200k URLs; a crawl queues tens of millions, and a
structure that grows faster than its URLs (a per-host counter table, a list turning
from ziplist to linked list, a Bloom filling up) only shows at scale. One Redis (the
embedded redis-server, AOF on, started here and stopped at the end), one client:

1. Grow cumulatively: admit (batch --batch, fresh plain links as Admission.item builds
   them: the real record, score and URL patterns, so the trap-pattern counters are
   counted) up to each size, then measure there: Redis bytes per queued URL (INFO
   used_memory delta, and per key family by MEMORY USAGE), admit URLs/s of the step.
2. Lease + report (after any AOF rewrite the admission started has ended): --lease-sample
   URLs leased (batch --batch, delay 0) and reported done+ack: ops/s, p50/p99 of one
   lease() call, Redis CPU per 1,000 pages (INFO cpu delta). This removes those URLs
   from the queue (counted out of "queued").
3. False positives: --held-out URLs never admitted, looked up with bloom.lua's
   seen_before alone (nothing inserted): measured rate vs (1 - exp(-k n / m))^k.
4. Reference: scrapy-redis 0.9.1 (RFPDupeFilter + PriorityQueue) at --ref-urls.

The Bloom is sized as an operator would: SEEN_CAPACITY = the largest size.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

import redis
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, ROOT, percentile, redis_server, table
from _ops import (
    HELD_OUT_BASE,
    LinkItems,
    bloom_probe,
    done_and_ack,
    forking,
    iter_urls,
    memory_by_family,
    redis_cpu_s,
    scrapy_redis_reference,
    used_memory,
    wait_for_forks,
)
from bench_frontier_ops import warm_up

from extensions.admission.admit import Admission, seen_key, url_filter_from_settings
from extensions.admission.bloom import generations
from extensions.admission.canonical import Canonicalizer
from extensions.admission.prioritizer import Prioritizer
from extensions.dns.cache import DnsSettings, HostResolver
from extensions.frontier.core import Frontier, FrontierConfig
from extensions.state.keys import FrontierKeys
from tests.project_settings import project_frontier_config, project_settings

QUICK_SIZES = "5e4,2.5e5,1e6"
QUICK_IPS = 10_000
EMPTY_STREAK = 50


@dataclasses.dataclass
class Row:
    """What one size measured."""

    size: int
    admitted: int  # URLs the admit script queued so far (Bloom false positives refused)
    queued: int  # admitted minus every URL leased and acked so far
    memory: int  # INFO used_memory minus the empty server's
    families: dict[str, tuple[int, int, int]]
    admit_per_s: float  # of the step that reached this size
    lease_per_s: float  # pages leased + reported per second
    lease_p50_ms: float
    lease_p99_ms: float
    cpu_per_1000: float  # redis-server CPU ms per 1,000 pages leased + reported
    admit_cpu_per_1000: float  # redis-server CPU ms per 1,000 URLs admitted
    fp_measured: float
    fp_theory: float  # (1 - exp(-k n / m))^k from the Bloom's own count

    @property
    def bytes_per_url(self) -> float:
        return self.memory / max(1, self.queued)


def check_items(maker: LinkItems, n_ips: int, sample: int = 500) -> None:
    """The streamed items equal Admission.item's for the same links (records included)."""
    hosts = {host: ip for _, host, ip in iter_urls(n_ips, 0, sample)}
    settings = project_settings(
        {"DNS_HOSTS_MAP": hosts, "DNS_HOSTS_MAP_ONLY": True, "DNS_ALLOWED_NETWORKS": "10.0.0.0/8"}
    )
    resolver = HostResolver(DnsSettings.from_settings(settings))
    admission = Admission(
        Canonicalizer(), url_filter_from_settings(settings), resolver, maker.prioritizer, 5, False
    )
    # Records carry the admission second: both sides built in the same frozen second.
    with mock.patch("extensions.admission.records.time.time", return_value=time.time()):
        want = LinkItems.admission_items(admission, 0, sample, n_ips)
        got = [item.lua() for item in maker.items(n_ips, 0, sample)]
    same = sum(1 for a, b in zip(want, got, strict=True) if a == b)
    if same < sample:
        mismatch = next((a, b) for a, b in zip(want, got, strict=True) if a != b)
        raise SystemExit(f"streamed items differ from Admission.item: {mismatch}")
    print(f"items: {same}/{sample} sampled links identical to Admission.item's (record too)")


async def admit_range(frontier: Frontier, maker: LinkItems, args: Any, lo: int, hi: int) -> int:
    """Admit URL numbers lo..hi-1, batch by batch, one call in flight: the next batch is
    built while Redis runs the last one (one client's sequential calls, without Python's
    item-building time between them). URLs the admit script queued."""
    items = maker.items(args.ips, lo, hi)
    batch = list(itertools.islice(items, args.batch))
    admitted = 0
    while batch:
        call = asyncio.ensure_future(frontier.admit(batch))
        await asyncio.sleep(0)  # let the call go out before building the next batch
        batch = list(itertools.islice(items, args.batch))
        admitted += int((await call).extra["admitted"])
    return admitted


async def lease_sample(
    frontier: Frontier, total: int, batch: int
) -> tuple[int, float, list[float]]:
    """Lease `total` URLs in lease(batch) calls, each reported done+ack: (pages, seconds,
    per-lease() latencies). A call may lease nothing while it recycles drained IPs' back
    queues (lease.lua): only EMPTY_STREAK empty calls in a row end the sample early."""
    pages, empty, latencies = 0, 0, []
    start = time.perf_counter()
    while pages < total and empty < EMPTY_STREAK:
        t = time.perf_counter()
        reply = await frontier.lease(min(batch, total - pages))
        latencies.append(time.perf_counter() - t)
        empty = 0 if reply.leases else empty + 1
        events = done_and_ack(reply.leases)
        if events:
            await frontier.report(events)
        pages += len(reply.leases)
    return pages, time.perf_counter() - start, latencies


def false_positives(probe: Any, n_ips: int, held_out: int) -> float:
    """Share of `held_out` never-admitted URLs the Bloom calls seen."""
    positives, end = 0, HELD_OUT_BASE + held_out
    for start in range(HELD_OUT_BASE, end, 5000):
        urls = iter_urls(n_ips, start, min(end, start + 5000))
        positives += probe([seen_key(url) for url, _, _ in urls])
    return positives / held_out


async def bloom_theory(client: aioredis.Redis, keys: FrontierKeys) -> float:
    """The summed estimate of every generation, from its count (bloom.py Generation)."""
    return sum(g.fp_rate for g in await generations(client, keys))


async def measure_size(ctx: Context, size: int, admitted: int, leased: int) -> tuple[Row, int]:
    """Everything at `size` URLs admitted (counts so far given, this step's admit done)."""
    args, sync = ctx.args, ctx.sync
    families = memory_by_family(sync, ctx.keys.prefix)
    memory = used_memory(sync) - ctx.base
    # An AOF rewrite the admission started forks the whole dataset (2.6 GB at 20 M): the
    # parent's copy-on-write faults would land in this size's lease figures alone.
    waited = wait_for_forks(sync)
    if waited > 1:
        print(f"    waited {waited:.0f} s for an AOF rewrite to end", flush=True)
    cpu0 = redis_cpu_s(sync)
    pages, seconds, latencies = await lease_sample(ctx.frontier, args.lease_sample, args.batch)
    cpu = redis_cpu_s(sync) - cpu0
    if forking(sync):
        print("    a fork ran at the end of the lease sample: its figures include it")
    fp = false_positives(ctx.probe, args.ips, args.held_out)
    return Row(
        size=size,
        admitted=admitted,
        queued=admitted - leased,  # the URLs leased before this size's memory was read
        memory=memory,
        families=families,
        admit_per_s=0.0,
        lease_per_s=pages / seconds,
        lease_p50_ms=1e3 * percentile(latencies, 0.5),
        lease_p99_ms=1e3 * percentile(latencies, 0.99),
        cpu_per_1000=1e6 * cpu / max(1, pages),
        admit_cpu_per_1000=0.0,
        fp_measured=fp,
        fp_theory=await bloom_theory(ctx.client, ctx.keys),
    ), pages


@dataclasses.dataclass
class Context:
    args: argparse.Namespace
    sync: redis.Redis
    client: aioredis.Redis
    keys: FrontierKeys
    frontier: Frontier
    probe: Any
    base: int  # used_memory of the empty server, scripts loaded


def scale_config(args: argparse.Namespace) -> FrontierConfig:
    config = project_frontier_config(delay=0.0, back_queues=args.back_queues, lease_ttl=600)
    seen = dataclasses.replace(config.seen, capacity=seen_capacity(args))
    return dataclasses.replace(config, seen=seen)


def seen_capacity(args: argparse.Namespace) -> int:
    """SEEN_CAPACITY as an operator sizes it for this crawl: the largest size, +1% so the
    last batch does not open a second generation (SEEN_GROWTH x the bitmap) at the end."""
    return args.sizes[-1] + args.sizes[-1] // 100


async def grow(args: argparse.Namespace, url: str) -> tuple[list[Row], dict[str, float]]:
    """Admit up to each size and measure there; the scrapy-redis reference runs after the
    first size (its keys are deleted again), so a run cut short still has both."""
    sync, client = redis.Redis.from_url(url), aioredis.Redis.from_url(url)
    keys, config = FrontierKeys("scale"), scale_config(args)
    maker = LinkItems(Prioritizer.from_settings(project_settings()))
    check_items(maker, args.ips)
    base = await warm_up(client, config, sync)
    frontier = Frontier(client, keys, config)
    ctx = Context(args, sync, client, keys, frontier, bloom_probe(sync, keys, config), base)
    rows: list[Row] = []
    ref: dict[str, float] = {}
    admitted = leased = done = 0
    for size in args.sizes:
        print(f"... admitting URLs {done:,} .. {size:,}", flush=True)
        cpu0, start = redis_cpu_s(sync), time.perf_counter()
        admitted += await admit_range(frontier, maker, args, done, size)
        seconds, cpu = time.perf_counter() - start, redis_cpu_s(sync) - cpu0
        row, pages = await measure_size(ctx, size, admitted, leased)
        row.admit_per_s = (size - done) / seconds
        row.admit_cpu_per_1000 = 1e6 * cpu / (size - done)
        leased += pages
        done = size
        rows.append(row)
        print("    " + "  ".join(HEADERS), "\n    " + "  ".join(row_cells(row)), flush=True)
        if not ref:
            print(f"... scrapy-redis reference, {args.ref_urls:,} URLs", flush=True)
            ref = scrapy_redis_reference(url, list(iter_urls(args.ips, 0, args.ref_urls)), 3.0)
            print(f"    {ref}", flush=True)
    await client.aclose()
    sync.close()
    return rows, ref


# Costs (lower is better) whose ratio to the first size must stay within 20%.
COSTS = {
    "B/queued URL": lambda r: r.bytes_per_url,
    "admit us/URL": lambda r: 1e6 / r.admit_per_s,
    "admit Redis CPU ms/1k": lambda r: r.admit_cpu_per_1000,
    "lease+report us/page": lambda r: 1e6 / r.lease_per_s,
    "lease p50 ms": lambda r: r.lease_p50_ms,
    "lease p99 ms": lambda r: r.lease_p99_ms,
    "lease Redis CPU ms/1k pages": lambda r: r.cpu_per_1000,
}


HEADERS = ["URLs admitted", "queued", "B/queued URL", "admit URLs/s", "admit CPU ms/1k"]
HEADERS += ["lease+report pages/s", "lease p50 ms", "p99 ms", "lease CPU ms/1k", "FP meas."]
HEADERS += ["FP theory"]


def row_cells(r: Row) -> list[str]:
    return [
        *(f"{r.size:,}", f"{r.queued:,}", f"{r.bytes_per_url:.1f}"),
        *(f"{r.admit_per_s:,.0f}", f"{r.admit_cpu_per_1000:.0f}", f"{r.lease_per_s:,.0f}"),
        *(f"{r.lease_p50_ms:.2f}", f"{r.lease_p99_ms:.2f}", f"{r.cpu_per_1000:.0f}"),
        *(f"{r.fp_measured:.2e}", f"{r.fp_theory:.2e}"),
    ]


def print_rows(rows: list[Row], ref: dict[str, float]) -> None:
    body = [row_cells(r) for r in rows]
    n = ref["n"]
    body.append(
        [
            *(f"scrapy-redis {n:,.0f}", f"{n:,.0f}", f"{ref['mem'] / n:.1f}"),
            *(f"{ref['push_per_s']:,.0f}", "", f"{ref['pop_per_s']:,.0f} (pop)"),
            *("", "", "", "0 (exact set)", ""),
        ]
    )
    print(table(HEADERS, body))
    first = rows[0]
    ratio_rows = []
    for name, cost in COSTS.items():
        ratios = [cost(r) / cost(first) if cost(first) else math.nan for r in rows]
        flat = "yes" if all(x <= 1.2 for x in ratios) else "NO"
        ratio_rows.append([name, *(f"{x:.2f}" for x in ratios), flat])
    print(f"\n  cost ratios to the {first.size:,} row (flat = every ratio <= 1.20):")
    print(table(["cost", *(f"{r.size:,}" for r in rows), "flat"], ratio_rows))
    print(
        f"  ours / scrapy-redis bytes per URL at the first size: "
        f"{first.bytes_per_url / (ref['mem'] / n):.2f}"
    )


def print_families(rows: list[Row]) -> None:
    names = sorted(
        {f for r in rows for f in r.families}, key=lambda f: -rows[-1].families.get(f, (0, 0, 0))[1]
    )
    body = []
    for fam in names:
        cells = [f"{r.families.get(fam, (0, 0, 0))[1] / max(1, r.queued):.1f}" for r in rows]
        keys = rows[-1].families.get(fam, (0, 0, 0))[0]
        body.append([fam, f"{keys:,}", *cells])
    print("\n  bytes per queued URL by key family (MEMORY USAGE; keys at the last size):")
    print(table(["family", "keys", *(f"{r.size:,}" for r in rows)], body))


def machine() -> str:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    load = os.getloadavg()
    return (
        f"commit {commit or '? (not a git checkout)'}; {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e6,5e6,20e6", help="cumulative sizes, ascending")
    parser.add_argument("--ips", type=int, default=100_000, help="IPs the URLs spread over")
    parser.add_argument(
        "--quick", action="store_true", help=f"--sizes {QUICK_SIZES} --ips {QUICK_IPS:,}"
    )
    parser.add_argument("--batch", type=int, default=100, help="admit and lease batch")
    parser.add_argument("--lease-sample", type=int, default=20_000, help="URLs leased per size")
    parser.add_argument("--held-out", type=int, default=200_000, help="URLs probed for FP")
    parser.add_argument("--ref-urls", type=int, default=1_000_000, help="scrapy-redis URLs")
    parser.add_argument("--back-queues", type=int, default=1024, help="FRONTIER_BACK_QUEUES")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.ips = QUICK_SIZES, QUICK_IPS
        args.ref_urls = min(args.ref_urls, 50_000)
    args.sizes = sorted(int(float(s)) for s in args.sizes.split(","))
    return args


def main() -> int:
    args = parse_args()
    print("bench_scale: the cost curve of one Redis frontier (extensions.frontier.core.Frontier)")
    print(f"{machine()}; sizes {', '.join(f'{s:,}' for s in args.sizes)} over {args.ips:,} IPs")
    print(
        f"SEEN_CAPACITY = {seen_capacity(args):,} (the largest size + 1%); lease sample "
        f"{args.lease_sample:,} per size; held-out FP probes {args.held_out:,}"
    )
    print(NOISE_NOTE)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp, redis_server(Path(tmp)) as url:
        version = redis.Redis.from_url(url).info("server")["redis_version"]
        print(f"redis-server {version} at {url} (embedded, AOF on)", flush=True)
        rows, ref = asyncio.run(grow(args, url))
    print()
    print_rows(rows, ref)
    print_families(rows)
    print(
        f"  plain links, depth 1-6, no parent; lease+report leases and acks {args.lease_sample:,} "
        "URLs per size (removed from the queue); FP theory = sum over generations of "
        "(1 - exp(-k n / m))^k from the Bloom's count"
    )
    print(f"total bench time {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
