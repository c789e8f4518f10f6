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
import json
import re
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import UsageError

from crawlproj.operator import OperatorCommand, OperatorError
from extensions.admission.filters import host_of
from extensions.recrawl.state import lua

if TYPE_CHECKING:
    import argparse

    from extensions.state.connection import AnyRedis
    from extensions.state.keys import FrontierKeys, ShardedKeys

BATCH = 500


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
        self, client: AnyRedis, sharded: ShardedKeys, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        keys = sharded.crawl_keys  # re-crawl state is crawl-wide (not sharded by IP)
        chosen = [name for name in ("all", "host", "pattern") if getattr(opts, name)]
        if args or len(chosen) != 1:
            raise UsageError(
                "give exactly one of --all, --host HOST, --pattern GLOB", print_help=False
            )
        wanted = url_matcher(opts.host, opts.pattern)
        mark = client.register_script(lua("mark"))
        now = time.time()
        stored = matched = 0
        counts = [0, 0, 0]  # made due, already due, claimed (being re-fetched)
        for batch in _stored_batches(client, keys):
            stored += len(batch)
            fps = [fp for fp, url in batch if wanted(url)]
            matched += len(fps)
            if fps:
                reply = mark(keys=[keys.recrawl_due, keys.recrawl_claims], args=[now, *fps])
                counts = [c + int(r) for c, r in zip(counts, reply, strict=True)]
        if stored == 0:
            raise OperatorError(
                f"crawl {keys.crawl!r} has no stored URLs (nothing fetched yet, or a "
                "different CRAWL_DATA_DIR / REDIS_URL / --crawl)"
            )
        due = counts[0] + counts[1]
        message = (
            f"{due} stored URLs due now ({matched} matched of {stored}; "
            f"{counts[2]} already being re-fetched)"
        )
        return {
            "message": message,
            "due_now": due,
            "made_due": counts[0],
            "being_refetched": counts[2],
            "matched": matched,
            "stored": stored,
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


def _stored_batches(client: AnyRedis, keys: FrontierKeys) -> Iterator[list[tuple[str, str]]]:
    """(fp, url) of every stored URL, BATCH at a time (ZSCAN: no long Redis call)."""
    fps: list[str] = []
    for member, _score in client.zscan_iter(keys.recrawl_due, count=BATCH):
        fps.append(member.decode() if isinstance(member, bytes) else str(member))
        if len(fps) == BATCH:
            yield _with_urls(client, keys, fps)
            fps = []
    if fps:
        yield _with_urls(client, keys, fps)


def _with_urls(client: AnyRedis, keys: FrontierKeys, fps: list[str]) -> list[tuple[str, str]]:
    pipe = client.pipeline(transaction=False)
    for fp in fps:
        pipe.get(keys.doc(fp))
    docs = pipe.execute()
    return [(fp, json.loads(doc)["u"]) for fp, doc in zip(fps, docs, strict=True) if doc]
