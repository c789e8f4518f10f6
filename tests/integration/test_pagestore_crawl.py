"""`scrapy crawl web` with the content path end to end, then `scrapy replay`.

Real subprocess crawls of the local test web plus a small web of near-duplicate
pages (twin_web.py), bodies stored in moto's S3 server over HTTP (real boto3)
or in the local file store; the S3 server is paused or cut mid-crawl.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crawlproj.settings import FEED_EXPORT_FIELDS
from extensions.pagestore.protocol import split_ref
from scripts.crawlrun import (
    PROJECT_ROOT,
    read_items,
    run_crawl,
    start_crawl,
    wait_crawl,
    write_seeds,
)
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.s3_support import MotoServer, TcpForwarder, free_port
from tests.integration.twin_web import ADDRESS, GROUP, HOST, TwinWeb

DELAY = 0.2
HTML_KEY = re.compile(r"^(?:.+/)?([0-9a-f]{2})/([0-9a-f]{64})(\.html)?\.gz$")
STOP_LINE = "Page store unavailable, stopping the crawl:"
# boto3 must never look for credentials beyond the settings (no instance metadata).
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")


def small_web(pages: int = 4, latency_ms: float = 0.0) -> WebSpec:
    return WebSpec(
        hosts=[
            HostSpec("alpha.test", pages=pages, redirect=True, latency_ms=latency_ms),
            HostSpec("beta.test", ip_group="shared", pages=pages, latency_ms=latency_ms),
            HostSpec("gamma.test", ip_group="shared", pages=pages, latency_ms=latency_ms),
        ]
    )


# The twin site's plain text (/notes.txt, its 404 bodies) is stored: not skipped or cut.
KEEP_TEXT = {"URL_SKIP_EXTENSIONS": "", "CONTENT_TYPES_WANTED": "text/html,text/plain"}


def crawl_settings(web: TestWeb, twins: TwinWeb | None = None, **extra: Any) -> dict[str, Any]:
    hosts = web.hosts_map_setting()
    if twins is not None:
        hosts[HOST] = ADDRESS
    return {"DNS_HOSTS_MAP": hosts, "FRONTIER_DELAY": DELAY, **KEEP_TEXT, **extra}


def new_bucket(moto: MotoServer) -> str:
    name = f"crawl-{uuid.uuid4().hex[:10]}"
    moto.client().create_bucket(Bucket=name)
    return name


def s3_body(moto: MotoServer, ref: str) -> bytes:
    root, key = split_ref(ref)
    bucket, _, prefix = root.removeprefix("s3://").partition("/")
    full = f"{prefix}/{key}" if prefix else key
    return gzip.decompress(moto.client().get_object(Bucket=bucket, Key=full)["Body"].read())


def file_body(ref: str) -> bytes:
    return gzip.decompress(Path(ref.removeprefix("file://")).read_bytes())


def assert_every_ref_is_stored(rows: list[dict[str, Any]], read: Callable[[str], bytes]) -> None:
    """No row claims a body that is not stored, and each key is its body's sha256."""
    for row in rows:
        if row["content_ref"] is None:
            continue
        match = HTML_KEY.match(split_ref(row["content_ref"])[1])
        assert match, row["content_ref"]
        body = read(row["content_ref"])
        assert hashlib.sha256(body).hexdigest() == match.group(2), row["url"]
        assert len(body) == row["length"]


def assert_twins_stored_once(rows: list[dict[str, Any]], twins: TwinWeb) -> None:
    group = [r for r in rows if r["url"] in {twins.url(p) for p in GROUP}]
    assert len(group) == len(GROUP)
    stored = [r for r in group if r["content_ref"]]
    assert len(stored) == 1, [(r["url"], r["duplicate_of"]) for r in group]
    for row in group:
        if row is not stored[0]:
            assert row["duplicate_of"] == stored[0]["url"] and row["content_ref"] is None
    # The pages' links to /ref, /lib, /archive... all answer the same 404 body.
    not_found = [r for r in rows if r["url"].startswith(twins.url("/")) and r["status"] == 404]
    assert len(not_found) >= 2 and sum(bool(r["content_ref"]) for r in not_found) == 1


@pytest.fixture(scope="module")
def s3_crawl(moto_s3: MotoServer, tmp_path_factory: pytest.TempPathFactory):
    """One crawl into moto; the webs stay up for the replay test."""
    tmp = tmp_path_factory.mktemp("s3crawl")
    bucket = new_bucket(moto_s3)
    with TestWeb(small_web(), lifetime=300) as web, TwinWeb() as twins:
        seeds = write_seeds(tmp / "seeds.txt", [*web.seeds, twins.url()])
        settings = {**crawl_settings(web, twins), **moto_s3.settings(f"s3://{bucket}/pages")}
        # A second feed on S3 (Scrapy's S3FeedStorage, the same AWS_* settings) beside -O.
        feed = {f"s3://{bucket}/rows/%(name)s.jsonl": {"format": "jsonlines"}}
        result = run_crawl(seeds, tmp / "data", {**settings, "FEEDS": feed})
        yield web, twins, result, bucket, settings, tmp


def test_bodies_land_in_s3_under_content_addressed_keys(s3_crawl, moto_s3) -> None:
    web, _twins, result, bucket, _, _ = s3_crawl
    assert result.returncode == 0, result.log[-3000:]
    rows = result.items
    assert {r["final_url"] for r in rows} >= set(web.pages)
    assert_every_ref_is_stored(rows, lambda ref: s3_body(moto_s3, ref))
    refs = {split_ref(r["content_ref"])[1] for r in rows if r["content_ref"]}
    assert {k.removeprefix("pages/") for k in moto_s3.keys(bucket, "pages/")} == refs
    for row in rows:
        assert list(row) == FEED_EXPORT_FIELDS
        assert row["http_status"] == row["status"]
    page = next(r for r in rows if r["final_url"] == web.seeds[0])
    assert page["content_ref"] or page["duplicate_of"]
    assert all(
        r["content_ref"].startswith(f"s3://{bucket}/pages/") for r in rows if r["content_ref"]
    )
    assert page["extracted"]["title"] and page["extracted"]["outlinks"] > 0
    assert re.fullmatch(r"[0-9a-f]{16}", page["simhash_hex"])
    assert "Traceback" not in result.log


def test_rows_also_go_to_an_s3_feed(s3_crawl, moto_s3) -> None:
    _, _, result, bucket, _, _ = s3_crawl
    body = moto_s3.client().get_object(Bucket=bucket, Key="rows/web.jsonl")["Body"].read()
    rows = [json.loads(line) for line in body.decode().splitlines()]
    assert rows == result.items


def test_near_duplicate_pages_of_a_crawl_are_stored_once(s3_crawl) -> None:
    web, twins, result, _, _, _ = s3_crawl
    assert_twins_stored_once(result.items, twins)
    # ...and every distinct page is stored as itself: the test web's pages (distinct
    # prose of one site's template) and the twin site's unrelated article and text.
    distinct = {*web.pages, twins.url("/other"), twins.url("/notes.txt")}
    rows = [r for r in result.items if r["final_url"] in distinct and r["status"] == 200]
    assert {r["final_url"] for r in rows} == distinct
    for row in rows:
        assert row["content_ref"] and row["duplicate_of"] is None, row["url"]
    assert "'content/near_duplicate': " in result.log
    assert "'content/exact_duplicate': " in result.log


def test_replay_reproduces_the_rows_without_a_request(s3_crawl, tmp_path: Path) -> None:
    web, twins, result, _, settings, tmp = s3_crawl
    before = (len(web.requests()), len(twins.requests))
    out = tmp_path / "replayed.jsonl"
    cmd = [sys.executable, "-m", "scrapy", "replay", str(tmp / "data" / "items.jsonl")]
    cmd += ["-O", str(out)]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={json.dumps(value) if isinstance(value, dict) else value}"]
    proc = subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (len(web.requests()), len(twins.requests)) == before, "replay contacted the web"
    replayed = read_items(out)
    assert len(replayed) == len(result.items)
    originals = {r["url"]: r for r in result.items}
    for old, new in zip(result.items, replayed, strict=True):
        if (
            old["duplicate_of"]
            and old["content_hash"] != originals[old["duplicate_of"]]["content_hash"]
        ):
            # A near duplicate is parsed on its original's body (its own was not stored).
            old, new = dict(old, extracted=None), dict(new, extracted=None)
        assert new == old, old["url"]
    assert "0 bodies missing" in proc.stderr and "0 requests sent" in proc.stderr


def test_the_file_store_and_default_feed_behave_the_same(tmp_path: Path) -> None:
    with TwinWeb() as twins:
        seeds = write_seeds(tmp_path / "seeds.txt", [twins.url()])
        settings = {"DNS_HOSTS_MAP": {HOST: ADDRESS}, "FRONTIER_DELAY": DELAY, **KEEP_TEXT}
        proc = start_crawl(seeds, tmp_path / "data", settings, items=None)  # default feed
        _, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr[-3000:]
    feeds = list((tmp_path / "data" / "items").glob("web-*.jsonl"))
    assert len(feeds) == 1, "CRAWL_ITEMS_URI is the feed when -o/-O are not given"
    rows = read_items(feeds[0])
    assert_twins_stored_once(rows, twins)
    assert_every_ref_is_stored(rows, file_body)
    pages_dir = tmp_path / "data" / "pages"
    on_disk = {str(p.relative_to(pages_dir)) for p in pages_dir.rglob("*.gz")}
    assert on_disk == {split_ref(r["content_ref"])[1] for r in rows if r["content_ref"]}
    refs = [r["content_ref"] for r in rows if r["content_ref"]]
    assert all(ref.startswith(f"file://{pages_dir}/") for ref in refs)


def wait_for_objects(moto: MotoServer, bucket: str, n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while len(moto.keys(bucket)) < n:
        assert proc.poll() is None, "the crawl ended before the store was stopped"
        assert time.monotonic() < deadline, "no uploads"
        time.sleep(0.05)


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> str:
    return wait_crawl(proc, timeout)[1]


def assert_stopped_for_the_store(proc: subprocess.Popen[str], stderr: str) -> None:
    assert proc.returncode != 0
    assert "crawl ended with reason 'pagestore_unavailable'" in stderr
    assert stderr.count(STOP_LINE) == 1, stderr[-3000:]
    assert "Traceback" not in stderr
    assert "'frontier/released/unfinished'" in stderr  # pages handed back, not acked


RETRY_FAST = {"PAGESTORE_RETRIES": 1, "PAGESTORE_RETRY_DELAY": 0.2, "PAGESTORE_TIMEOUT": 1.0}


def test_a_paused_s3_server_stops_the_crawl_and_no_row_claims_a_lost_body(
    moto_s3: MotoServer, tmp_path: Path
) -> None:
    bucket = new_bucket(moto_s3)
    with TestWeb(small_web(pages=12, latency_ms=30), lifetime=300) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        settings = {**crawl_settings(web), **moto_s3.settings(f"s3://{bucket}"), **RETRY_FAST}
        items = tmp_path / "items.jsonl"
        proc = start_crawl(seeds, tmp_path / "data", settings, items)
        try:
            wait_for_objects(moto_s3, bucket, 3, proc)
            moto_s3.pause()  # frozen: connections open, nothing answers
            stderr = finish(proc)
        finally:
            moto_s3.resume()
    assert_stopped_for_the_store(proc, stderr)
    assert "Read timeout on endpoint URL" in stderr or "timed out" in stderr
    rows = read_items(items)
    assert 0 < len(rows) < len(web.pages)
    assert_every_ref_is_stored(rows, lambda ref: s3_body(moto_s3, ref))


def test_a_cut_s3_connection_stops_the_crawl_and_a_second_run_stores_the_rest(
    moto_s3: MotoServer, tmp_path: Path
) -> None:
    bucket = new_bucket(moto_s3)
    forwarder = TcpForwarder(("127.0.0.1", moto_s3.port)).start()
    with TestWeb(small_web(pages=12, latency_ms=30), lifetime=300) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        store = moto_s3.settings(f"s3://{bucket}", endpoint=forwarder.endpoint)
        settings = {**crawl_settings(web), **store, **RETRY_FAST}
        proc = start_crawl(seeds, tmp_path / "data", settings, tmp_path / "run1.jsonl")
        try:
            wait_for_objects(moto_s3, bucket, 3, proc)
        finally:
            forwarder.close()  # connection refused from now on
        stderr = finish(proc)
        assert_stopped_for_the_store(proc, stderr)
        assert "is unreachable" in stderr
        first = read_items(tmp_path / "run1.jsonl")
        assert_every_ref_is_stored(first, lambda ref: s3_body(moto_s3, ref))
        # S3 back on the same address: the same crawl resumes and fetches what was handed back.
        forwarder = TcpForwarder(("127.0.0.1", moto_s3.port), port=forwarder.port).start()
        try:
            second = run_crawl(seeds, tmp_path / "data", settings)
        finally:
            forwarder.close()
    assert second.returncode == 0, second.log[-3000:]
    rows = first + second.items
    assert_every_ref_is_stored(rows, lambda ref: s3_body(moto_s3, ref))
    stored = {r["url"] for r in rows if r["content_ref"]}
    # Every page is accounted for: stored, or a duplicate of a stored page.
    kept = {r["final_url"] for r in rows if r["content_ref"] or r["duplicate_of"] in stored}
    assert set(web.pages) <= kept, "a page handed back was not stored by the second run"


@pytest.mark.parametrize(
    ("problem", "message"),
    [("endpoint", "is unreachable"), ("bucket", "bucket missing-bucket does not exist")],
)
def test_an_unusable_s3_store_stops_the_crawl_with_one_line(
    moto_s3: MotoServer, tmp_path: Path, problem: str, message: str
) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}" if problem == "endpoint" else None
    bucket = "missing-bucket" if problem == "bucket" else new_bucket(moto_s3)
    settings = moto_s3.settings(f"s3://{bucket}/p", endpoint=endpoint)
    result = run_crawl("http://solo.test/", tmp_path / "data", settings, timeout=60)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("crawlproj:")]
    assert len(lines) == 1 and message in lines[0] and "PAGESTORE_URI" in lines[0]
    assert "Traceback" not in result.stderr
