"""`scrapy recrawl --all | --host HOST | --pattern GLOB`: make stored URLs due now.

The running crawl (or the next `scrapy crawl web` on the same data folder, which then
needs no seeds) re-visits them with conditional GETs: unchanged pages answer 304 and
are not stored again. A finite crawl ends when they are done. Works with or without a
running crawl: without REDIS_URL it opens the embedded Redis of CRAWL_DATA_DIR.

--pattern is a shell glob on the whole URL (`*://*.example.org/news/*`), or `re:` and a
regular expression searched in it.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import UsageError

from crawlproj.operator import OperatorCommand, OperatorError
from extensions.admission.filters import host_of

if TYPE_CHECKING:
    import argparse

    from extensions.frontier.admin import FrontierAdmin


class Command(OperatorCommand):
    def syntax(self) -> str:
        return "--all | --host HOST | --pattern GLOB|re:REGEX"

    def short_desc(self) -> str:
        return "Re-visit stored URLs now (all, one host, or a URL pattern)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--all", action="store_true", help="every stored URL")
        parser.add_argument("--host", default=None, help="stored URLs of this host")
        parser.add_argument("--pattern", default=None, help="URL glob, or re:REGEX")

    def act(
        self, admin: FrontierAdmin, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        chosen = [name for name in ("all", "host", "pattern") if getattr(opts, name)]
        if args or len(chosen) != 1:
            raise UsageError(
                "give exactly one of --all, --host HOST, --pattern GLOB", print_help=False
            )
        marked = admin.mark_due(url_matcher(opts.host, opts.pattern), time.time())
        if marked.stored == 0:
            raise OperatorError(
                f"crawl {admin.keys.crawl!r} has no stored URLs (nothing fetched yet, or a "
                "different CRAWL_DATA_DIR / REDIS_URL / --crawl)"
            )
        due = marked.made_due + marked.already_due
        message = (
            f"{due} stored URLs due now ({marked.matched} matched of {marked.stored}; "
            f"{marked.claimed} already being re-fetched)"
        )
        return {
            "message": message,
            "due_now": due,
            "made_due": marked.made_due,
            "being_refetched": marked.claimed,
            "matched": marked.matched,
            "stored": marked.stored,
        }


def url_matcher(host: str | None, pattern: str | None) -> Callable[[str], bool]:
    if host:
        wanted_host = host.strip().lower().rstrip(".")
        return lambda url: host_of(url) == wanted_host
    if pattern and pattern.startswith("re:"):
        try:
            regex = re.compile(pattern[3:])
        except re.error as exc:
            raise UsageError(f"--pattern {pattern!r}: {exc}", print_help=False) from None
        return lambda url: regex.search(url) is not None
    if pattern:
        return lambda url: fnmatch.fnmatchcase(url, pattern)
    return lambda url: True
