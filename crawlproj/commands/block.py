"""`scrapy block RULE...`: stop fetching hosts or URL patterns, while the crawl runs.

Rules: host:example.org (and its subdomains), re:REGEX (searched in the URL), or a
glob such as *.example.org/private/*. Queued URLs that match are dropped when they
come up, never fetched; new links that match are not queued.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawlproj.operator import OperatorCommand, need

if TYPE_CHECKING:
    import argparse

    from extensions.frontier.admin import FrontierAdmin


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "RULE [RULE ...]"

    def short_desc(self) -> str:
        return "Block hosts or URL patterns in the running crawl"

    def act(
        self, admin: FrontierAdmin, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        need(args, "RULE (host:H, re:REGEX or a glob)")
        added = admin.block(args).changed  # ValueError names a bad rule
        return {"message": f"blocked {added} new rule(s)", "rules": admin.block_rule_count()}
