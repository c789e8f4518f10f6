"""`scrapy throttle HOST|IP (--delay S | --rps R | --clear)`: an operator override of one
server's delay, in effect from its next fetch. delay(IP) = max(FRONTIER_DELAY, Crawl-delay,
override, backoff), so an override slows a server down; it cannot speed it past the
configured delay. A host name stands for its IP: every host on that IP is throttled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import UsageError

from crawlproj.operator import OperatorCommand, need

if TYPE_CHECKING:
    import argparse

    from extensions.frontier.admin import FrontierAdmin


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "HOST|IP (--delay SECONDS | --rps REQUESTS_PER_SECOND | --clear)"

    def short_desc(self) -> str:
        return "Set or clear a per-host/per-IP delay override in the running crawl"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--delay", type=float, help="seconds between fetches")
        group.add_argument("--rps", type=float, help="requests per second")
        group.add_argument("--clear", action="store_true", help="remove the override")

    def act(
        self, admin: FrontierAdmin, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        need(args, "HOST or IP")
        ip = admin.ip_of(args[0])  # an unknown host is named before a missing flag
        if opts.clear:
            admin.set_delay(ip, None)
            return {"message": f"override cleared for {ip}", "ip": ip}
        if opts.delay is not None and opts.delay > 0:
            delay = opts.delay
        elif opts.rps is not None and opts.rps > 0:
            delay = 1.0 / opts.rps  # the period between starts, counted end to start
        else:
            raise UsageError("give --delay or --rps (> 0), or --clear", print_help=False)
        admin.set_delay(ip, delay)
        return {"message": f"{ip} ({args[0]}) now waits >= {delay:g}s", "ip": ip, "delay": delay}
