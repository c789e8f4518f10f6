"""Redis bytes per queued URL as issue 15 measured it from the outside.

    .venv/bin/python bench/bench_seed_memory.py [--urls 100000] [--hosts 1000]

`scrapy seed -f` of --urls word-slug URLs (~60 characters: /docs/<three words>-<n>.html,
nearly every one its own URL shape) over --hosts hosts into an empty redis-server of its
own on 127.0.0.1 (the hosts are mapped to 127.0.x.y by DNS_HOSTS_MAP and never
contacted: seeding fetches nothing), then INFO used_memory before and after, divided by
the URLs queued, and MEMORY USAGE per key family. The project's settings as they ship
(an outsider's run); `--capacity N` sets SEEN_CAPACITY (the Bloom filter and the shapes
bitmap sized for N URLs, as an operator who knows the crawl's size would).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import redis_server, table
from _ops import memory_by_family, used_memory

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    *("alpha", "beta", "gamma", "delta", "install", "guide", "release", "notes"),
    *("config", "tuning", "index", "search", "backup", "restore", "server", "client"),
]


def seeds(n: int, hosts: list[str]) -> list[str]:
    rng = random.Random(3)
    out = []
    for k in range(n):
        slug = "-".join(rng.choice(WORDS) for _ in range(3))
        out.append(f"https://{hosts[k % len(hosts)]}/docs/{slug}-{k}.html")
    return out


def seed(url: str, path: Path, hosts_map: dict[str, str], capacity: int) -> None:
    settings = {
        "REDIS_URL": url,
        "DNS_HOSTS_MAP": json.dumps(hosts_map),
        "DNS_ALLOWED_NETWORKS": "127.0.0.0/8",
        "LOG_LEVEL": "WARNING",
    }
    if capacity:
        settings["SEEN_CAPACITY"] = str(capacity)
    cmd = [sys.executable, "-m", "scrapy", "seed", "-f", str(path)]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ))
    if done.returncode != 0:
        raise SystemExit(f"scrapy seed failed: {done.stderr[-2000:]}")
    print(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--capacity", type=int, default=0, help="SEEN_CAPACITY (0: default)")
    args = parser.parse_args()
    hosts = [f"www.site{i}.test" for i in range(args.hosts)]
    hosts_map = {h: f"127.0.{i // 250 + 1}.{i % 250 + 1}" for i, h in enumerate(hosts)}
    urls = seeds(args.urls, hosts)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "seeds.txt"
        path.write_text("\n".join(urls) + "\n")
        with redis_server(Path(tmp)) as url:
            client = redis.Redis.from_url(url)
            before = used_memory(client)
            seed(url, path, hosts_map, args.capacity)
            delta = used_memory(client) - before
            families = memory_by_family(client, "crawlproj:{web}")
    n = args.urls
    mean = sum(map(len, urls)) / n
    capacity = f"{args.capacity:,}" if args.capacity else "the default"
    print(f"{n:,} URLs (mean {mean:.1f} chars) over {args.hosts:,} hosts, SEEN_CAPACITY {capacity}")
    print(f"INFO used_memory delta: {delta:,} B = {delta / n:.1f} B per queued URL")
    rows = [
        [family, keys, f"{size:,}", f"{size / n:.1f}"]
        for family, (keys, size, _) in sorted(families.items(), key=lambda kv: -kv[1][1])
    ]
    print(table(["family", "keys", "bytes", "B/queued URL"], rows))


if __name__ == "__main__":
    main()
