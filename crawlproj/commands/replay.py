"""`scrapy replay`: re-run the spider's extraction over stored bodies, no request to the web.

    scrapy replay ITEMS.jsonl [MORE.jsonl ...] [-O out.jsonl | -o out.jsonl] [-s NAME=VALUE]

Each metadata row's body is read back from the page store through its
``content_ref`` (s3:// or file://, with the project's AWS_* settings), a
response is rebuilt from the row (final_url, status, the parse-relevant
headers), and the spider's own extraction path (``parse_page``,
``content_signature``, ``follow_links``, ``finalise_row``) runs on it. The
reproduced rows go to -O/-o (jsonlines, the feed's columns) or stdout.

Rows without content_ref: a duplicate reuses the body of its duplicate_of row
when that row (with a stored body) is in the input, keeping its own content
fields (content_hash, simhash describe its own body, which was not stored);
others (empty bodies, store failures) are copied through unchanged and counted.

WARC files (WARC_URI, as the crawl wrote them): each row's record is looked up in
the stored CDXJ indexes (final_url + fetched_at; extensions/warc/index.py), which
fills its warc_file, warc_offset and warc_length; a row whose body is neither in
the page store nor its original's is read from its WARC record (a response, or the
response an identical-payload revisit refers to).
No reactor, no frontier, no downloader: the only I/O is the page store and WARC_URI.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from scrapy.commands import ScrapyCommand
from scrapy.exporters import JsonLinesItemExporter
from scrapy.http import Headers, Request
from scrapy.responsetypes import responsetypes

from crawlproj.extractors import registry
from crawlproj.items import ROW_FIELDS, PageItem
from crawlproj.page_tokens import PageTokenConfig
from crawlproj.pipelines.metadata import finalise_row
from crawlproj.pipelines.signature import content_signature
from crawlproj.spiders.page_parse import follow_links, parse_page
from extensions.pagestore.backends import StoreCache
from extensions.pagestore.protocol import StoreUnavailable, one_line
from extensions.warc.index import WarcLocations
from extensions.warc.storage import open_warc_store, warc_uri

if TYPE_CHECKING:
    import argparse

    from scrapy.http import Response
    from scrapy.settings import BaseSettings

# Fields describing the fetch: copied from the row, they cannot be re-derived.
FETCH_FIELDS = (
    "url",
    "final_url",
    "status",
    "fetched_at",
    "depth",
    "ip",
    "content_type",
    "etag",
    "last_modified",
    "headers",
    "duplicate_of",
    "simhash_distance",  # against the crawl's index / stored copy at the time
    "resemblance",
    "soft_404",  # against the origin's probe answer at the time
    "content_ref",
    "change",  # the visit's history (re-crawl state), not in the body
    "change_rate",
)


class ReplayError(RuntimeError):
    """A problem with the input; the message is one line saying what to fix."""


@dataclass
class Counts:
    """Replay's counters; also the stats object handed to extractors (inc_value)."""

    values: Counter[str] = field(default_factory=Counter)

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] += count

    def __getitem__(self, key: str) -> int:
        return self.values[key]


def read_rows(paths: list[Path]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in paths:
        if not path.is_file():
            raise ReplayError(f"items file {path} does not exist")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ReplayError(f"{path}:{number} is not a JSON row ({exc.msg})") from None
            if not isinstance(row, dict) or not row.get("url") or not row.get("final_url"):
                raise ReplayError(f"{path}:{number} is not a metadata row (no url/final_url)")
            rows.append(row)
    return rows


def rebuild_response(row: dict[str, Any], body: bytes) -> Response:
    """The response the spider saw, as far as parsing is concerned."""
    headers = Headers(row.get("headers") or {})
    url = row["final_url"]
    cls = responsetypes.from_args(headers=headers, url=url, body=body)
    request = Request(url, meta={"depth": row.get("depth") or 0})
    status = row.get("status") or 200
    return cls(url=url, status=status, headers=headers, body=body, request=request)


class Replayer:
    def __init__(self, settings: BaseSettings, rows: list[dict[str, Any]]) -> None:
        self.token = settings.get("ROBOTS_USER_AGENT") or "crawlproj"
        self.page_tokens = PageTokenConfig.from_settings(settings)  # as the crawl cut them
        self.stores = StoreCache(settings)
        self.counts = Counts()
        self.rows = rows
        # duplicate_of names the earlier page's URL (its "url" field).
        self.by_url = {row["url"]: row for row in reversed(rows)}
        try:
            self.warc = WarcLocations(open_warc_store(warc_uri(settings), settings))
        except (ValueError, BotoCoreError, ClientError) as exc:
            raise ReplayError(f"cannot read the WARC indexes: {one_line(exc)}") from None

    def body_for(self, row: dict[str, Any]) -> tuple[bytes | None, bool]:
        """(body, own): the row's own stored body, a duplicate's original body, the
        body in its WARC record, or None."""
        if row.get("content_ref"):
            return self._read(row["content_ref"]), True
        original = self.by_url.get(row.get("duplicate_of") or "")
        if original is not None and original.get("content_ref"):
            return self._read(original["content_ref"]), False
        location = self.warc.of(row)
        if location is not None and row.get("status") != 304:
            body = self.warc.body(location)
            if body is not None:
                self.counts.inc_value("from_warc")
                return body, not row.get("duplicate_of")
        return None, False

    def locate(self, item: PageItem, row: dict[str, Any]) -> PageItem:
        """warc_file, warc_offset, warc_length from the stored indexes (None: not stored)."""
        location = self.warc.of(row)
        if location is not None:
            item["warc_file"] = location.file
            item["warc_offset"], item["warc_length"] = location.offset, location.length
            self.counts.inc_value("located")
        return item

    def _read(self, ref: str) -> bytes | None:
        try:
            return self.stores.read_ref(ref)
        except KeyError:
            self.counts.inc_value("missing")
            print(f"crawlproj: replay: {ref} is not in the store", file=sys.stderr)
            return None
        except ValueError as exc:
            raise ReplayError(str(exc)) from None
        except (BotoCoreError, ClientError, OSError) as exc:
            raise ReplayError(f"cannot read {ref}: {one_line(exc)}") from None

    def replay(self, row: dict[str, Any]) -> PageItem:
        return self.locate(self._replay(row), row)

    def _replay(self, row: dict[str, Any]) -> PageItem:
        body, own = self.body_for(row)
        item = PageItem({name: row.get(name) for name in FETCH_FIELDS if name in row})
        if body is None:
            # Nothing to parse: the crawl's row, unchanged.
            item.update({k: v for k, v in row.items() if k in PageItem.fields})
            self.counts.inc_value("copied")
            return finalise_row(item)
        response = rebuild_response(row, body)
        page = parse_page(response, self.token, self.counts)
        item.update(page.fields)
        if own:
            signature = content_signature(response, row.get("content_type"))
            item["length"] = len(body)
            item["content_hash"], item["simhash"] = signature.content_hash, signature.text.simhash
            item["text_hash"] = signature.text.text_hash
            self.counts.inc_value("reproduced")
        else:
            for name in ("length", "content_hash", "text_hash", "simhash"):
                item[name] = row.get(name)
            self.counts.inc_value("reused_duplicate_body")
        links = follow_links(page, response, self.counts, self.page_tokens)
        self.counts.inc_value("links", len(links))
        return finalise_row(item)


def exporter_for(stream: IO[bytes], settings: BaseSettings) -> JsonLinesItemExporter:
    fields = settings.getlist("FEED_EXPORT_FIELDS") or list(ROW_FIELDS)
    encoding = settings.get("FEED_EXPORT_ENCODING") or "utf-8"
    # Scrapy 2.19 annotates the file as BytesIO; it only calls write() on it.
    return JsonLinesItemExporter(stream, fields_to_export=fields, encoding=encoding)  # type: ignore[arg-type]


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False  # no reactor, no engine, no frontier
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "ITEMS.jsonl [MORE.jsonl ...] [-O OUT.jsonl | -o OUT.jsonl]"

    def short_desc(self) -> str:
        return "Re-run the extractors over stored bodies (no web requests)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="FILE", help="append rows to FILE")
        parser.add_argument(
            "-O", "--overwrite-output", metavar="FILE", help="write rows to FILE (overwrite)"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        try:
            counts = self._replay(args, opts)
        except (ReplayError, StoreUnavailable, OSError) as exc:
            print(f"crawlproj: replay: {one_line(exc)}", file=sys.stderr)
            self.exitcode = 2
            return
        print(
            f"crawlproj: replay: {counts['rows']} rows: {counts['reproduced']} reproduced, "
            f"{counts['reused_duplicate_body']} duplicates on their original's body, "
            f"{counts['copied']} without a body copied, {counts['missing']} bodies missing "
            f"from the store; {counts['from_warc']} bodies read from WARC records, "
            f"{counts['located']} rows located in stored WARC files; "
            f"{counts['links']} links extracted, 0 requests sent",
            file=sys.stderr,
        )
        self.exitcode = 1 if counts["missing"] else 0

    def _replay(self, args: list[str], opts: argparse.Namespace) -> Counts:
        assert self.settings is not None
        if not args:
            raise ReplayError("no items file; usage: scrapy replay ITEMS.jsonl -O out.jsonl")
        if opts.output and opts.overwrite_output:
            raise ReplayError("use -o (append) or -O (overwrite), not both")
        rows = read_rows([Path(a) for a in args])
        registry.load(self.settings.getlist("EXTRACTOR_MODULES"))
        replayer = Replayer(self.settings, rows)
        target = opts.overwrite_output or opts.output
        mode = "wb" if opts.overwrite_output else "ab"
        stream: IO[bytes] = open(target, mode) if target else sys.stdout.buffer  # noqa: SIM115
        try:
            exporter = exporter_for(stream, self.settings)
            exporter.start_exporting()
            for row in rows:
                exporter.export_item(replayer.replay(row))
                replayer.counts.inc_value("rows")
            exporter.finish_exporting()
        finally:
            if target:
                stream.close()
        return replayer.counts
