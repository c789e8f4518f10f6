"""WARC records and files without a crawl: the HTTP message written, revisit choices,
and what a restart does with a file a dead worker left open."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from scrapy.http import HtmlResponse, Request

from crawlproj.items import PageItem
from crawlproj.pipelines.warc import exchange_of, plan_revisit
from extensions.warc.files import OpenWarc, recover
from extensions.warc.records import (
    IDENTICAL_PROFILE,
    NEAR_DUPLICATE_PROFILE,
    Original,
    exchange_records,
    response_message,
    sha1_digest,
    truncation,
)

WARCIO = Path(sys.executable).with_name("warcio")
BODY = b"<html><body>decoded body</body></html>"


def response(flags: list[str] | None = None) -> HtmlResponse:
    headers = {"Transfer-Encoding": "chunked", "Content-Length": "17", "Content-Type": "text/html"}
    request = Request(
        "http://a.test/p?q=1", headers={"User-Agent": "t"}, meta={"frontier_ip": "127.0.0.9"}
    )
    return HtmlResponse(
        "http://a.test/p?q=1", body=BODY, headers=headers, request=request, flags=flags
    )


def item(**fields: object) -> PageItem:
    base = {"url": "http://a.test/p?q=1", "final_url": "http://a.test/p?q=1", "status": 200}
    return PageItem(base, fetched_at="2026-12-01T10:00:00.123+00:00", **fields)


def test_the_response_headers_describe_the_decoded_payload() -> None:
    message = response_message(response())
    assert message.get_header("Transfer-Encoding") is None
    assert message.get_header("Content-Length") == str(len(BODY))
    assert message.get_header("X-Crawlproj-Orig-Transfer-Encoding") == "chunked"
    assert message.get_header("X-Crawlproj-Orig-Content-Length") == "17"
    assert message.statusline == "200 OK"


def test_truncated_bodies_say_why() -> None:
    assert truncation(response()) is None
    assert truncation(response(["download_stopped"])) == "unspecified"
    assert truncation(response(["partial"])) == "disconnect"


def test_an_exact_duplicate_is_a_revisit_only_when_the_payloads_match() -> None:
    original = Original("http://a.test/o", "2026-12-01T09:00:00.000Z", "<urn:uuid:x>", "")
    dup = item(duplicate_of="http://a.test/o", simhash_distance=None)
    same = {"http://a.test/o": dataclasses.replace(original, payload_digest=sha1_digest(BODY))}
    assert plan_revisit(dup, sha1_digest(BODY), same.get).profile == IDENTICAL_PROFILE  # type: ignore[union-attr]
    assert plan_revisit(dup, "sha1:B", same.get) is None  # whitespace differs: in full
    assert plan_revisit(dup, sha1_digest(BODY), {}.get) is None  # no record known: in full
    near = item(duplicate_of="http://a.test/o", simhash_distance=4, resemblance=0.9)
    revisit = plan_revisit(near, "sha1:B", {}.get)
    assert revisit is not None and revisit.profile == NEAR_DUPLICATE_PROFILE
    assert revisit.refers_to == "http://a.test/o" and revisit.distance == 4


def test_original_round_trips_through_redis_text() -> None:
    original = Original("http://a.test/a b", "2026-12-01T09:00:00.000Z", "<urn:uuid:x>", "sha1:A")
    assert Original.decode(original.encode()) == original


def test_a_file_left_open_is_cut_after_its_last_whole_record(tmp_path: Path) -> None:
    warc = OpenWarc.create(tmp_path, "t-1-00000-w.warc.gz")
    warc.write([warc.writer.create_warcinfo_record(warc.name, {"software": "test"})])
    exchange = exchange_of(item(), response())
    assert exchange.ip == "127.0.0.9" and exchange.date == "2026-12-01T10:00:00.123Z"
    located = warc.write(exchange_records(warc.writer, exchange, None))
    warc.handle.write(b"\x1f\x8b\x08half a record")  # the dead worker's last write
    warc.handle.close()  # the worker died: its lock is gone
    empty = OpenWarc.create(tmp_path, "t-2-00000-w.warc.gz")
    empty.write([empty.writer.create_warcinfo_record(empty.name, {})])
    empty.handle.close()
    held = OpenWarc.create(tmp_path, "t-3-00000-w.warc.gz")  # a live worker's
    [orphan] = recover(tmp_path)
    assert orphan.name == warc.name and orphan.records == 3
    assert orphan.size == located[-1].offset + located[-1].length
    assert not (tmp_path / "t-2-00000-w.warc.gz.open").exists()  # nothing in it: discarded
    assert held.path.exists()
    orphan.finish()
    check = subprocess.run([str(WARCIO), "check", "-v", str(orphan.path)], capture_output=True)
    assert check.returncode == 0 and check.stdout.count(b"digest pass") == 3, check.stdout
