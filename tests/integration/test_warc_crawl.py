"""WARC output end to end: `scrapy crawl web` with WARC_ENABLED on the test web and the
twin site (exact and near duplicates), files rotated small, then `warcio check`, the
records against the rows, and `scrapy replay` joining rows to the stored indexes."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from extensions.pagestore.protocol import split_ref
from extensions.warc.records import IDENTICAL_PROFILE, NEAR_DUPLICATE_PROFILE
from scripts.crawlrun import run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.twin_web import ADDRESS, HOST, TwinWeb, pages
from tests.integration.warc_support import (
    FETCH_TYPES,
    fetch_records,
    folder_records,
    replay,
    row_key,
    warc_files,
    warcio_check,
)

DELAY = 0.2
SMALL_FILES = 16 * 1024  # several files per crawl: rotation is exercised
KEEP_TEXT = {"URL_SKIP_EXTENSIONS": "", "CONTENT_TYPES_WANTED": "text/html,text/plain"}


def warc_settings(tmp: Path, web: TestWeb, **extra: Any) -> dict[str, Any]:
    return {
        "DNS_HOSTS_MAP": {**web.hosts_map_setting(), HOST: ADDRESS},
        "FRONTIER_DELAY": DELAY,
        "PAGESTORE_URI": f"file://{tmp}/pages",
        "WARC_ENABLED": True,
        "WARC_URI": f"file://{tmp}/warc",
        "WARC_MAX_SIZE": SMALL_FILES,
        "WARC_PREFIX": "test",
        **KEEP_TEXT,
        **extra,
    }


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("warc")
    spec = WebSpec(hosts=[HostSpec("alpha.test", pages=4, redirect=True), HostSpec("beta.test")])
    with TestWeb(spec, lifetime=300) as web, TwinWeb() as twins:
        seeds = write_seeds(tmp / "seeds.txt", [*web.seeds, twins.url()])
        settings = warc_settings(tmp, web)
        result = run_crawl(seeds, tmp / "data", settings, timeout=180)
        assert result.returncode == 0, result.log[-3000:]
        yield web, twins, result, settings, tmp


def test_every_file_passes_warcio_check_and_is_indexed(crawl) -> None:
    _, _, result, _, tmp = crawl
    files = warc_files(tmp / "warc")
    assert len(files) >= 2, "WARC_MAX_SIZE rotated no file"
    check = warcio_check(files)
    assert check.returncode == 0, check.stdout[-3000:]
    # Every record's digests verified (a revisit's block only: its payload is elsewhere).
    verified = check.stdout.count("digest pass") + check.stdout.count("not checked (revisit)")
    assert verified == 2 * len(result.items) + len(files) and "fail" not in check.stdout
    for path in files:
        assert path.name.startswith("test-") and path.with_name(path.name + ".cdxj").is_file()
    assert list((tmp / "data" / "warc-open").iterdir()) == []  # nothing left staged
    assert "Traceback" not in result.log


def test_one_response_or_revisit_per_row_and_its_request(crawl) -> None:
    _, _, result, _, tmp = crawl
    records = folder_records(tmp / "warc")
    by_key = fetch_records(records)
    assert sum(r.kind in FETCH_TYPES for r in records) == len(result.items)
    assert set(by_key) == {row_key(row) for row in result.items}
    requests = [r for r in records if r.kind == "request"]
    assert {r.headers["WARC-Concurrent-To"] for r in requests} == {
        r.headers["WARC-Record-ID"] for r in by_key.values()
    }
    assert sum(r.kind == "warcinfo" for r in records) == len(warc_files(tmp / "warc"))
    for row in result.items:
        record = by_key[row_key(row)]
        assert record.headers["WARC-IP-Address"] == row["ip"]
        assert record.http_status == str(row["status"])
        if row["content_ref"]:  # the sha256 header is the page store's key
            assert record.headers["Crawlproj-Content-Key"] == split_ref(row["content_ref"])[1]
        assert row["warc_file"] is None  # the crawl's rows: their file was not stored yet


def test_payloads_are_the_served_bodies(crawl) -> None:
    _, twins, result, _, tmp = crawl
    by_key = fetch_records(folder_records(tmp / "warc"))
    for path, (_, body) in pages().items():
        row = next(r for r in result.items if r["final_url"] == twins.url(path))
        record = by_key[row_key(row)]
        if record.kind == "response":
            assert record.payload == body, path
            sha1 = base64.b32encode(hashlib.sha1(body).digest()).decode()
            assert record.headers["WARC-Payload-Digest"] == f"sha1:{sha1}"


def test_duplicates_are_revisits_naming_their_original(crawl) -> None:
    _, twins, result, _, tmp = crawl
    by_key = fetch_records(folder_records(tmp / "warc"))
    rows = {r["url"]: r for r in result.items}
    record_of = {url: by_key[row_key(row)] for url, row in rows.items()}
    near = [r for r in result.items if r["duplicate_of"] and r["simhash_distance"] is not None]
    assert near
    for row in near:
        record = record_of[row["url"]]
        original = record_of[row["duplicate_of"]]
        assert record.kind == "revisit" and record.headers["WARC-Profile"] == (
            NEAR_DUPLICATE_PROFILE
        )
        assert record.headers["WARC-Refers-To"] == original.headers["WARC-Record-ID"]
        assert record.headers["WARC-Refers-To-Date"] == original.headers["WARC-Date"]
        assert record.headers["Crawlproj-Simhash-Distance"] == str(row["simhash_distance"])
    # /ref and /lib answer one 404 body: the second is an identical-payload revisit.
    exact = [r for r in result.items if r["duplicate_of"] and r["simhash_distance"] is None]
    identical = [r for r in exact if record_of[r["url"]].kind == "revisit"]
    assert identical, [r["url"] for r in exact]
    for row in identical:
        record, original = record_of[row["url"]], record_of[row["duplicate_of"]]
        assert record.headers["WARC-Profile"] == IDENTICAL_PROFILE
        assert record.headers["WARC-Refers-To-Target-URI"] == original.headers["WARC-Target-URI"]
        assert record.headers["WARC-Payload-Digest"] == original.headers["WARC-Payload-Digest"]
    # /doc-copy: the same content hash (whitespace aside), not the same payload: in full.
    copy = record_of[twins.url("/doc-copy")]
    assert rows[twins.url("/doc-copy")]["duplicate_of"] and copy.kind == "response"


def test_replay_locates_rows_in_stored_files_and_reads_bodies(crawl, tmp_path: Path) -> None:
    _, _, result, settings, tmp = crawl
    # Without the page store the bodies come from the WARC records.
    settings = {**settings, "PAGESTORE_URI": f"file://{tmp_path}/empty"}
    rows = [dict(r, content_ref=None) for r in result.items]
    items = tmp_path / "rows.jsonl"
    items.write_text("".join(f"{json.dumps(r)}\n" for r in rows))
    stderr, replayed = replay([items], tmp_path / "out.jsonl", settings)
    assert len(replayed) == len(rows)
    by_key = fetch_records(folder_records(tmp / "warc"))
    for old, new in zip(result.items, replayed, strict=True):
        record = by_key[row_key(old)]
        assert new["warc_file"] == f"file://{tmp}/warc/{record.file}"
        assert new["warc_offset"] == record.offset and new["warc_length"] > 0
        if record.kind == "response" and old["content_hash"]:
            assert new["content_hash"] == old["content_hash"], old["url"]
    assert f"{len(rows)} rows located in stored WARC files" in stderr
