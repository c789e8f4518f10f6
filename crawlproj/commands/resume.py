"""`scrapy resume [HOST|IP]`: undo `scrapy pause` for the crawl or one host/IP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawlproj.operator import OperatorCommand, OperatorError, ip_of

if TYPE_CHECKING:
    import argparse

    from extensions.state.connection import AnyRedis
    from extensions.state.keys import ShardedKeys


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "[HOST|IP]"

    def short_desc(self) -> str:
        return "Resume the whole crawl, or one paused host/IP"

    def act(
        self, client: AnyRedis, keys: ShardedKeys, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        if not args:
            # One DEL per shard: the keys are in different slots on a cluster.
            if not sum(client.delete(shard.key("paused")) for shard in keys.all()):
                raise OperatorError("the crawl is not paused")
            return {"message": "crawl resumed"}
        assert self.settings is not None
        ip = ip_of(client, keys, self.settings, args[0])
        if not client.hdel(keys.for_ip(ip).key("paused_ips"), ip):
            raise OperatorError(f"{args[0]} (IP {ip}) is not paused")
        return {"message": f"resumed {args[0]} (IP {ip})", "ip": ip}
