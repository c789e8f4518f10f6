"""`scrapy unblock RULE...`: remove block rules (exactly as they were added)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawlproj.operator import OperatorCommand, OperatorError, need

if TYPE_CHECKING:
    import argparse

    from extensions.state.connection import AnyRedis
    from extensions.state.keys import ShardedKeys


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "RULE [RULE ...]"

    def short_desc(self) -> str:
        return "Remove block rules from the running crawl"

    def act(
        self, client: AnyRedis, keys: ShardedKeys, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        need(args, "RULE")
        blocklist = keys.crawl_keys.blocklist
        removed = client.srem(blocklist, *args)
        if not removed:
            rules = sorted(r.decode() for r in client.smembers(blocklist))
            raise OperatorError(f"no such rule; current rules: {rules or 'none'}")
        return {"message": f"unblocked {removed} rule(s)", "rules": client.scard(blocklist)}
