"""Is a lease as cheap at 20 M queued URLs as at 1 M? Both sizes side by side in one run.

    .venv/bin/python bench/bench_lease_flat.py [--small 1e6 --large 20e6 --ips 100000]
        [--small-ips 5000] [--rounds 5 --lease-sample 20000]

Why: bench_scale.py measures lease+report once per size, minutes apart, so machine noise
and whatever Redis does in the background at that moment (an AOF rewrite's fork of a
2.6 GB process, whose copy-on-write faults the parent pays for) land in one size's row.
Here two embedded Redis servers (AOF on, as in bench_scale) are filled to --small and
--large URLs (the same admission as bench_scale: plain links over --ips IPs, the
Bloom sized for the large one in both), then --rounds lease samples alternate between
them (small, large, then large, small, ...), each --lease-sample URLs leased and
reported done+ack. Each sample reports Redis CPU per 1,000 pages (INFO cpu), the
scripts' own execution time per page from INFO commandstats, split into the lease
calls and the report calls, p50/p99 of one lease() call, and whether a fork
(AOF rewrite or RDB save) ran during it. Ratios large / small of the medians at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, percentile, redis_server, table
from _ops import LinkItems, done_and_ack, forking, redis_cpu_s, used_memory, wait_for_forks
from bench_frontier_ops import warm_up
from bench_scale import admit_range, machine

from extensions.admission.prioritizer import Prioritizer
from extensions.frontier.core import Frontier, FrontierConfig
from extensions.state.keys import FrontierKeys
from tests.project_settings import project_frontier_config, project_settings


@dataclasses.dataclass
class Server:
    size: int
    sync: redis.Redis
    frontier: Frontier
    base_memory: int
    queued: int = 0


@dataclasses.dataclass
class Sample:
    size: int
    round: int
    pages: int
    pages_per_s: float
    p50_ms: float
    p99_ms: float
    cpu_per_1000: float  # redis-server CPU ms per 1,000 pages (process, main thread)
    lease_us: float  # lease script execution time per page (INFO commandstats)
    report_us: float  # report script execution time per page
    forked: bool  # an AOF rewrite or RDB save ran at some point of the sample

    def cells(self) -> list[str]:
        return [
            f"{self.size:,}",
            str(self.round),
            f"{self.pages_per_s:,.0f}",
            f"{self.p50_ms:.2f}",
            f"{self.p99_ms:.2f}",
            f"{self.cpu_per_1000:.0f}",
            f"{self.lease_us:.1f}",
            f"{self.report_us:.1f}",
            "yes" if self.forked else "no",
        ]


HEADERS = ["queued", "round", "pages/s", "lease p50 ms", "p99 ms", "Redis CPU ms/1k"]
HEADERS += ["lease script us/page", "report script us/page", "fork during"]


def script_usec(sync: redis.Redis) -> float:
    """Microseconds Redis spent executing scripts so far (EVAL/EVALSHA/FCALL)."""
    stats = sync.info("commandstats")
    names = ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_fcall")
    return float(sum(stats.get(n, {}).get("usec", 0) for n in names))


async def timed(sync: redis.Redis, call: Awaitable[Any]) -> tuple[Any, float]:
    """The call's result, and the script time it cost (the coroutine starts here)."""
    before = script_usec(sync)
    result = await call
    return result, script_usec(sync) - before


async def sample(server: Server, n: int, batch: int, round_no: int) -> Sample:
    """Lease `n` URLs of `server` in lease(batch) calls, each reported done+ack."""
    sync, frontier = server.sync, server.frontier
    pages, lease_us, report_us, latencies, forked = 0, 0.0, 0.0, [], forking(sync)
    cpu0, start = redis_cpu_s(sync), time.perf_counter()
    while pages < n:
        t = time.perf_counter()
        reply, used = await timed(sync, frontier.lease(min(batch, n - pages)))
        latencies.append(time.perf_counter() - t)
        lease_us += used
        events = done_and_ack(reply.leases)
        if not events:
            break
        _, used = await timed(sync, frontier.report(events))
        report_us += used
        pages += len(reply.leases)
        forked = forked or (len(latencies) % 20 == 0 and forking(sync))
    seconds, cpu = time.perf_counter() - start, redis_cpu_s(sync) - cpu0
    server.queued -= pages
    per_page = max(1, pages)
    return Sample(
        size=server.size,
        round=round_no,
        pages=pages,
        pages_per_s=pages / seconds,
        p50_ms=1e3 * percentile(latencies, 0.5),
        p99_ms=1e3 * percentile(latencies, 0.99),
        cpu_per_1000=1e6 * cpu / per_page,
        lease_us=lease_us / per_page,
        report_us=report_us / per_page,
        forked=forked or forking(sync),
    )


def config_for(args: argparse.Namespace) -> FrontierConfig:
    config = project_frontier_config(delay=0.0, back_queues=args.back_queues, lease_ttl=600)
    capacity = args.large + args.large // 100  # as bench_scale: the largest size + 1%
    return dataclasses.replace(config, seen=dataclasses.replace(config.seen, capacity=capacity))


async def fill(url: str, size: int, ips: int, args: argparse.Namespace) -> Server:
    sync, client = redis.Redis.from_url(url), aioredis.Redis.from_url(url)
    config = config_for(args)
    base = await warm_up(client, config, sync)
    frontier = Frontier(client, FrontierKeys("flat"), config)
    maker = LinkItems(Prioritizer.from_settings(project_settings()))
    start = time.perf_counter()
    admitted = await admit_range(
        frontier, maker, argparse.Namespace(**{**vars(args), "ips": ips}), 0, size
    )
    seconds = time.perf_counter() - start
    memory = used_memory(sync) - base
    print(
        f"    {size:,}: {admitted:,} queued in {seconds:.0f} s, "
        f"{memory / max(1, admitted):.1f} B per queued URL",
        flush=True,
    )
    return Server(size, sync, frontier, base, admitted)


def settle(servers: list[Server]) -> None:
    """Wait out a fork the admission started, so the first samples start alike."""
    for server in servers:
        waited = wait_for_forks(server.sync)
        if waited > 1:
            print(f"    {server.size:,}: waited {waited:.0f} s for an AOF rewrite", flush=True)


async def run(args: argparse.Namespace, urls: tuple[str, str]) -> list[Sample]:
    servers = [
        await fill(urls[0], args.small, args.small_ips, args),
        await fill(urls[1], args.large, args.ips, args),
    ]
    settle(servers)
    samples = []
    for r in range(1, args.rounds + 1):
        order = servers if r % 2 else servers[::-1]
        for server in order:
            samples.append(await sample(server, args.lease_sample, args.batch, r))
            print("    " + "  ".join(samples[-1].cells()), flush=True)
    return samples


def summary(samples: list[Sample], args: argparse.Namespace) -> list[list[str]]:
    fields = {
        "pages/s": lambda s: s.pages_per_s,
        "lease p50 ms": lambda s: s.p50_ms,
        "p99 ms": lambda s: s.p99_ms,
        "Redis CPU ms/1k": lambda s: s.cpu_per_1000,
        "lease script us/page": lambda s: s.lease_us,
        "report script us/page": lambda s: s.report_us,
    }
    rows = []
    for name, get in fields.items():
        med = {
            size: statistics.median(get(s) for s in samples if s.size == size)
            for size in (args.small, args.large)
        }
        ratio = med[args.large] / med[args.small] if med[args.small] else float("nan")
        rows.append([name, f"{med[args.small]:,.2f}", f"{med[args.large]:,.2f}", f"{ratio:.2f}"])
    return rows


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=float, default=1e6, help="URLs queued in the first")
    parser.add_argument("--large", type=float, default=20e6, help="URLs queued in the second")
    parser.add_argument("--ips", type=int, default=100_000, help="IPs the URLs spread over")
    parser.add_argument(
        "--small-ips",
        type=int,
        default=0,
        help="IPs of the small server (default --ips; --ips x small / large keeps the "
        "URLs per IP, the back queues' depth, equal)",
    )
    parser.add_argument("--rounds", type=int, default=5, help="lease samples per server")
    parser.add_argument("--lease-sample", type=int, default=20_000, help="URLs per sample")
    parser.add_argument("--batch", type=int, default=100, help="admit and lease batch")
    parser.add_argument("--back-queues", type=int, default=1024, help="FRONTIER_BACK_QUEUES")
    args = parser.parse_args()
    args.small, args.large = int(args.small), int(args.large)
    args.small_ips = args.small_ips or args.ips
    if not 0 < args.small < args.large:
        parser.error("--small must be above 0 and below --large")
    return args


def main() -> int:
    args = parse_args()
    print("bench_lease_flat: lease+report cost at two queue sizes, interleaved in one run")
    print(
        f"{machine()}; {args.small:,} URLs over {args.small_ips:,} IPs and "
        f"{args.large:,} over {args.ips:,}"
    )
    print(NOISE_NOTE)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        dirs = [Path(stack.enter_context(tempfile.TemporaryDirectory())) for _ in range(2)]
        urls = tuple(stack.enter_context(redis_server(d)) for d in dirs)
        print(f"two embedded redis-servers (AOF on): {urls[0]}, {urls[1]}", flush=True)
        samples = asyncio.run(run(args, (urls[0], urls[1])))
    print()
    print(table(HEADERS, [s.cells() for s in samples]))
    print()
    print("medians over the rounds, and large / small:")
    head = ["cost", f"{args.small:,}", f"{args.large:,}", "large / small"]
    print(table(head, summary(samples, args)))
    print(f"total bench time {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
