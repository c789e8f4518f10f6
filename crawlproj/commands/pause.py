"""`scrapy pause [HOST|IP]`: stop fetching, without losing anything, until `scrapy resume`.

Without an argument it is the kill switch for the whole crawl: no request leaves,
in-flight ones finish, workers keep running. With a host it pauses the host's IP
(hosts sharing that IP pause too: politeness is per server).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawlproj.operator import OperatorCommand, ip_of

if TYPE_CHECKING:
    import argparse

    import redis

    from extensions.frontier.keys import FrontierKeys


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "[HOST|IP]"

    def short_desc(self) -> str:
        return "Pause the whole crawl, or one host/IP"

    def act(
        self, client: redis.Redis, keys: FrontierKeys, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        if not args:
            client.set(keys.key("paused"), 1)
            return {"message": "crawl paused (scrapy resume to continue)"}
        assert self.settings is not None
        ip = ip_of(client, keys, self.settings, args[0])
        client.hset(keys.key("paused_ips"), ip, args[0])
        return {"message": f"paused {args[0]} (IP {ip})", "ip": ip}
