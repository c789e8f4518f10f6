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

    from extensions.state.connection import AnyRedis
    from extensions.state.keys import ShardedKeys


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "[HOST|IP]"

    def short_desc(self) -> str:
        return "Pause the whole crawl, or one host/IP"

    def act(
        self, client: AnyRedis, keys: ShardedKeys, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        if not args:
            for shard in keys.all():  # one key per shard: each lease script reads its own
                client.set(shard.key("paused"), 1)
            return {"message": "crawl paused (scrapy resume to continue)"}
        assert self.settings is not None
        ip = ip_of(client, keys, self.settings, args[0])
        client.hset(keys.for_ip(ip).key("paused_ips"), ip, args[0])
        return {"message": f"paused {args[0]} (IP {ip})", "ip": ip}
