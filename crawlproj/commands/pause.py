"""`scrapy pause [HOST|IP]`: stop fetching, without losing anything, until `scrapy resume`.

Without an argument it is the kill switch for the whole crawl: no request leaves,
in-flight ones finish, workers keep running. With a host it pauses the host's IP
(hosts sharing that IP pause too: politeness is per server).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawlproj.operator import OperatorCommand
from extensions.frontier.admin import ALL

if TYPE_CHECKING:
    import argparse

    from extensions.frontier.admin import FrontierAdmin


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "[HOST|IP]"

    def short_desc(self) -> str:
        return "Pause the whole crawl, or one host/IP"

    def act(
        self, admin: FrontierAdmin, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        if not args:
            admin.set_active(ALL, False)
            return {"message": "crawl paused (scrapy resume to continue)"}
        ip = admin.set_active(args[0], False).ip
        return {"message": f"paused {args[0]} (IP {ip})", "ip": ip}
