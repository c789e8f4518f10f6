"""Redis CPU per URL of the admit script (frontier/lua/admit.lua), fresh and duplicate.

    .venv/bin/python bench/bench_admit_cpu.py [--urls 50000] [--ips 10000] [--batch 100]
    .venv/bin/python bench/bench_admit_cpu.py --against /tmp/before   # a tree's admit.lua

`Frontier.admit` of --urls fresh outlink items (bench/_ops.py LinkItems: the real
prioritizer, pattern strings and records) in calls of --batch, then 20,000 of them again
(duplicates), into a redis-server of its own (AOF on, as the embedded one runs). Redis
CPU comes from INFO cpu deltas (used_cpu_user + used_cpu_sys), which a loaded machine
moves far less than wall-clock time (INFO commandstats usec moves more). The Bloom
filter is sized for the run (SEEN_CAPACITY = 2 x --urls), as an operator would.

Separate runs of one tree swing by +-15 us per fresh URL at load 5-7; `--against TREE`
runs TREE's admit script (its extensions/frontier/lua, e.g. a `git archive` of the commit
before) on a second redis-server, each call of the same items going to both in turn, so
both see the same load: two copies of one tree then differ by ~1 us.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
from extensions.state.keys import FIXED_KEYS, FrontierKeys  # noqa: E402
from extensions.state.lua import includes  # noqa: E402
from tests.project_settings import project_frontier_config, project_settings  # noqa: E402

DUPLICATES = 20_000


def redis_cpu_s(client: redis.Redis) -> float:
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def admit_source(tree: Path) -> str:
    """The admit script as extensions/state/lua.py assembles it, from `tree`'s files."""
    folder = tree / "extensions" / "frontier" / "lua"
    order: list[str] = []

    def visit(name: str) -> None:
        for used in includes((folder / f"{name}.lua").read_text()):
            if used not in order:
                visit(used)
                order.append(used)

    visit("admit")
    parts = [(folder / f"{name}.lua").read_text() for name in [*order, "admit"]]
    fields = ", ".join(f"{key} = KEYS[{i}]" for i, key in enumerate(FIXED_KEYS, start=1))
    return "local K = {" + fields + "}\n" + "\n".join(parts)


async def run(args: argparse.Namespace, urls: list[str]) -> None:
    syncs = [redis.Redis.from_url(url) for url in urls]
    clients = [aioredis.Redis.from_url(url) for url in urls]
    cfg = project_frontier_config(delay=0.0, back_queues=1024, lease_ttl=600)
    seen = dataclasses.replace(cfg.seen, capacity=2 * args.urls + 1000)
    cfg = dataclasses.replace(cfg, seen=seen)
    frontiers = [Frontier(client, FrontierKeys("cpu"), cfg) for client in clients]
    if args.against:
        script = clients[1].register_script(admit_source(Path(args.against)))
        frontiers[1]._scripts["admit"] = script
    items = list(
        LinkItems(Prioritizer.from_settings(project_settings())).items(args.ips, 0, args.urls)
    )

    async def admit(start: int, stop: int) -> list[float]:
        for i in range(start, stop, args.batch):
            for frontier in frontiers:
                await frontier.admit(items[i : i + args.batch])
        return [redis_cpu_s(sync) for sync in syncs]

    await admit(0, args.batch)  # the script loaded, the filter allocated
    start = [redis_cpu_s(sync) for sync in syncs]
    fresh = await admit(args.batch, args.urls)
    again = min(DUPLICATES, args.urls)
    done = await admit(0, again)
    for client in clients:
        await client.aclose()
    names = ["this tree", f"--against {args.against}"]
    for name, t0, t1, t2 in zip(names, start, fresh, done, strict=False):
        if len(urls) > 1:
            print(f"{name}:")
        print(f"Redis CPU per fresh URL:  {(t1 - t0) * 1e6 / (args.urls - args.batch):6.1f} us")
        print(f"Redis CPU per duplicate:  {(t2 - t1) * 1e6 / again:6.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=50_000)
    parser.add_argument("--ips", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--against", help="a tree whose admit script runs interleaved")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        urls = []
        for _ in range(2 if args.against else 1):
            workdir = stack.enter_context(tempfile.TemporaryDirectory())
            urls.append(stack.enter_context(redis_server(Path(workdir))))
        asyncio.run(run(args, urls))


if __name__ == "__main__":
    main()
