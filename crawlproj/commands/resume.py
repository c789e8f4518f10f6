"""`scrapy resume [HOST|IP]`: undo `scrapy pause` for the crawl or one host/IP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawlproj.operator import OperatorCommand, OperatorError
from extensions.frontier.admin import ALL

if TYPE_CHECKING:
    import argparse

    from extensions.frontier.admin import FrontierAdmin


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "[HOST|IP]"

    def short_desc(self) -> str:
        return "Resume the whole crawl, or one paused host/IP"

    def act(
        self, admin: FrontierAdmin, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        if not args:
            if not admin.set_active(ALL, True).changed:
                raise OperatorError("the crawl is not paused")
            return {"message": "crawl resumed"}
        change = admin.set_active(args[0], True)
        if not change.changed:
            raise OperatorError(f"{args[0]} (IP {change.ip}) is not paused")
        return {"message": f"resumed {args[0]} (IP {change.ip})", "ip": change.ip}
