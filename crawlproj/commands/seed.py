"""`scrapy seed URL... | -f FILE [--priority P]`: add seeds to the running (or next) crawl.

Seeds pass the same canonicalization, URL filters and URL-seen as discovered links
(a URL the crawl already has is counted, not queued twice). Hosts not pinned in
DNS_HOSTS_MAP wait in the frontier until a running worker resolves them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import UsageError

from crawlproj.operator import OperatorCommand, OperatorError
from crawlproj.seeds import SeedError, read_seed_arg
from extensions.admission.admit import Admission, Rejected, url_filter_from_settings
from extensions.admission.canonical import Canonicalizer
from extensions.admission.politeness_key import HOST_IP_KEYS
from extensions.admission.prioritizer import Prioritizer
from extensions.admission.records import AdmitItem
from extensions.config import read
from extensions.dns.cache import DnsSettings, HostResolver
from extensions.frontier.config import frontier_config

if TYPE_CHECKING:
    import argparse

    from extensions.frontier.admin import FrontierAdmin


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "URL [URL ...] | -f FILE [--priority P]"

    def short_desc(self) -> str:
        return "Add seed URLs to the crawl's frontier"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-f", "--file", help="seeds file: one URL per line, # comments")
        parser.add_argument("--priority", type=int, default=1, help="front queue (0 = first)")

    def act(
        self, admin: FrontierAdmin, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        assert self.settings is not None
        if not args and not opts.file:
            raise UsageError("give seed URLs or -f FILE", print_help=False)
        config = frontier_config(self.settings)
        if not 0 <= opts.priority < config.priorities:
            raise OperatorError(f"--priority must be 0..{config.priorities - 1}")
        urls = []
        try:
            if opts.file:
                urls += [s.url for s in read_seed_arg(opts.file)]
            if args:
                urls += [s.url for s in read_seed_arg(",".join(args))]
        except SeedError as exc:
            raise OperatorError(str(exc)) from None
        items, rejected = self._items(urls, opts.priority)
        reply = admin.admit(items, config)
        return {
            "message": f"seeded {reply.admitted} URL(s)",
            "already_seen": reply.duplicate,
            "rejected": rejected,
            "queued": reply.queued,
        }

    def _items(self, urls: list[str], priority: int) -> tuple[list[AdmitItem], int]:
        assert self.settings is not None
        admission = Admission(
            canonicalizer=Canonicalizer(),
            url_filter=url_filter_from_settings(self.settings),
            resolver=HostResolver(DnsSettings.from_settings(self.settings)),
            prioritizer=Prioritizer.from_settings(self.settings),
            priorities=frontier_config(self.settings).priorities,
            keep_referer=False,
            politeness=read(HOST_IP_KEYS, self.settings),
        )
        items, rejected = [], 0
        for url in urls:
            request = Request(url, meta={"depth": 0, "frontier_priority": priority})
            try:
                items.append(admission.item(request, None))  # type: ignore[arg-type]
            except Rejected as exc:
                print(f"crawlproj: skipping seed {url}: {exc.reason}", file=sys.stderr)
                rejected += 1
        return items, rejected
