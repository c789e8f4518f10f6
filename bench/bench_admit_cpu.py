"""Redis CPU per URL of the admit script (frontier/lua/admit.lua), fresh and duplicate.

    .venv/bin/python bench/bench_admit_cpu.py [--urls 50000] [--ips 10000] [--batch 100]

`Frontier.admit` of --urls fresh outlink items (bench/_ops.py LinkItems: the real
prioritizer, pattern strings and records) in calls of --batch, then 20,000 of them again
(duplicates), into a redis-server of its own (AOF on, as the embedded one runs). Redis
CPU comes from INFO cpu deltas (used_cpu_user + used_cpu_sys), which a loaded machine
moves far less than wall-clock time (INFO commandstats usec moves more). The Bloom
filter is sized for the run (SEEN_CAPACITY = 2 x --urls), as an operator would.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import tempfile
from pathlib import Path

import redis
import redis.asyncio as aioredis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import redis_server  # noqa: E402
from _ops import LinkItems  # noqa: E402

from extensions.admission.prioritizer import Prioritizer  # noqa: E402
from extensions.frontier.core import Frontier  # noqa: E402
from extensions.state.keys import FrontierKeys  # noqa: E402
from tests.project_settings import project_frontier_config, project_settings  # noqa: E402

DUPLICATES = 20_000


def redis_cpu_s(client: redis.Redis) -> float:
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


async def run(args: argparse.Namespace, url: str) -> None:
    sync, client = redis.Redis.from_url(url), aioredis.Redis.from_url(url)
    cfg = project_frontier_config(delay=0.0, back_queues=1024, lease_ttl=600)
    seen = dataclasses.replace(cfg.seen, capacity=2 * args.urls + 1000)
    frontier = Frontier(client, FrontierKeys("cpu"), dataclasses.replace(cfg, seen=seen))
    items = list(
        LinkItems(Prioritizer.from_settings(project_settings())).items(args.ips, 0, args.urls)
    )
    await frontier.admit(items[: args.batch])  # the script loaded, the filter allocated
    start = redis_cpu_s(sync)
    for i in range(args.batch, args.urls, args.batch):
        await frontier.admit(items[i : i + args.batch])
    fresh = redis_cpu_s(sync)
    again = min(DUPLICATES, args.urls)
    for i in range(0, again, args.batch):
        await frontier.admit(items[i : i + args.batch])
    done = redis_cpu_s(sync)
    await client.aclose()
    print(f"Redis CPU per fresh URL:  {(fresh - start) * 1e6 / (args.urls - args.batch):6.1f} us")
    print(f"Redis CPU per duplicate:  {(done - fresh) * 1e6 / again:6.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=50_000)
    parser.add_argument("--ips", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, redis_server(Path(workdir)) as url:
        asyncio.run(run(args, url))


if __name__ == "__main__":
    main()
