"""`scrapy unblock RULE...`: remove block rules (exactly as they were added)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawlproj.operator import OperatorCommand, OperatorError, need

if TYPE_CHECKING:
    import argparse

    from extensions.frontier.admin import FrontierAdmin


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "RULE [RULE ...]"

    def short_desc(self) -> str:
        return "Remove block rules from the running crawl"

    def act(
        self, admin: FrontierAdmin, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        need(args, "RULE")
        removed = admin.unblock(args).changed
        if not removed:
            rules = admin.block_rules()
            raise OperatorError(f"no such rule; current rules: {rules or 'none'}")
        return {"message": f"unblocked {removed} rule(s)", "rules": admin.block_rule_count()}
