"""CLI: ``python -m scripts.testweb --spec demo --port 0 --log FILE --lifetime 600``.

Prints ONE JSON line (port, hosts, seeds, pages, ...) once listening, then serves until
--lifetime elapses (or stdin closes with --exit-on-stdin-eof). The process always ends
by itself so a crashed test run can never leave a server behind.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import threading
from typing import Any

from .spec import WebSpec


def parse_spec(value: str) -> WebSpec:
    """``demo``, ``traps``, ``traps_holdout``, ``large_site``,
    ``many:N:P[:IPS[:LATENCY_MS[:SKEW]]]``, ``shared_ip:N:P`` or a JSON file."""
    kind, _, rest = value.partition(":")
    args = rest.split(":") if rest else []
    ready = {
        "demo": WebSpec.demo,
        "traps": WebSpec.traps,
        "large_site": WebSpec.large_site,
        "traps_holdout": WebSpec.traps_holdout,
    }
    if value in ready:
        return ready[value]()
    if kind == "many" and len(args) >= 2:
        n, pages = int(args[0]), int(args[1])
        ips = int(args[2]) if len(args) > 2 and args[2] else None
        latency = float(args[3]) if len(args) > 3 else 0.0
        skew = float(args[4]) if len(args) > 4 else None
        return WebSpec.many(n, pages, ips=ips, latency_ms=latency, skew=skew)
    if kind == "shared_ip" and len(args) >= 2:
        return WebSpec.shared_ip(int(args[0]), int(args[1]))
    return WebSpec.load(value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scripts.testweb", description=__doc__)
    parser.add_argument(
        "--spec", default="demo", help="demo | traps | large_site | many:N:P[:IPS] | FILE.json"
    )
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    parser.add_argument("--log", default=None, help="JSONL request log path")
    parser.add_argument("--lifetime", type=float, default=600.0, help="seconds before exit")
    parser.add_argument("--base-ip", default=None, help="first 127.x address (default 127.0.10.1)")
    parser.add_argument("--exit-on-stdin-eof", action="store_true", help="stop when stdin closes")
    return parser


def _raise_fd_limit() -> None:
    # Hundreds of listening sockets plus crawler connections exceed a 1024 soft limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = 65536 if hard == resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, target), hard))


def _watch_stdin(on_eof: Any) -> None:
    # A thread, not the reactor: a blocking read is the simplest portable EOF detector.
    def wait() -> None:
        try:
            while sys.stdin.buffer.read(65536):
                pass
        finally:
            on_eof()

    threading.Thread(target=wait, name="stdin-eof", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    spec = parse_spec(args.spec)
    if args.base_ip:
        spec.base_ip = args.base_ip
    _raise_fd_limit()
    # Imported here so `--help` and spec errors do not pay for (or install) the reactor.
    from .server import listen_all, make_server, reactor, stop_reactor
    from .sites import Site
    from .spec import assign_ips

    ips = sorted(set(assign_ips(spec).values()), key=lambda ip: tuple(map(int, ip.split("."))))
    resource_, factory = make_server(args.log)
    port, _listening = listen_all(factory, ips, args.port)
    site = Site(spec, port)
    resource_.site = site
    info = {
        "port": port,
        "hosts": site.hosts,
        "seeds": site.seeds(),
        "pages": site.pages(),
        "traps": site.trap_prefixes(),
        "ips": ips,
    }
    sys.stdout.write(json.dumps(info) + "\n")
    sys.stdout.flush()
    # Nothing else may go to stdout: the parent stops reading it after the first line.
    sys.stdout = sys.stderr
    reactor.callLater(args.lifetime, stop_reactor)
    if args.exit_on_stdin_eof:
        _watch_stdin(lambda: reactor.callFromThread(stop_reactor))
    try:
        reactor.run()
    finally:
        resource_.log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
