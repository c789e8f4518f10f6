"""The crawl's WARC files replay in pywb: `scrapy crawl web` with WARC_ENABLED on the twin
site (files rotated small), a pywb collection made from the stored files, `wayback` on
loopback, every page fetched through it, and headless Chromium loading one replayed page."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from extensions.warc.records import IDENTICAL_PROFILE, NEAR_DUPLICATE_PROFILE
from scripts.crawlrun import run_crawl, write_seeds
from tests.integration.browser import run_chromium
from tests.integration.pywb_server import Wayback, make_collection
from tests.integration.twin_web import ADDRESS, HOST, TwinWeb, pages
from tests.integration.warc_support import Record, fetch_records, folder_records, warc_files

SMALL_FILES = 1024  # about a file per fetch: pywb must find revisit originals across files
SETTINGS = {
    "DNS_HOSTS_MAP": {HOST: ADDRESS},
    "FRONTIER_DELAY": 0.1,
    "WARC_ENABLED": True,
    "WARC_MAX_SIZE": SMALL_FILES,
    "URL_SKIP_EXTENSIONS": "",
    "CONTENT_TYPES_WANTED": "text/html,text/plain",
}


@pytest.fixture(scope="module")
def replayed(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Wayback, TwinWeb, dict[str, Record]]]:
    """(wayback over the crawl's files, the twin web, records by URL)."""
    tmp = tmp_path_factory.mktemp("pywb")
    with TwinWeb() as twins:
        seeds = write_seeds(tmp / "seeds.txt", [twins.url()])
        stores = {"PAGESTORE_URI": f"file://{tmp}/pages", "WARC_URI": f"file://{tmp}/warc"}
        settings = {**SETTINGS, **stores}
        result = run_crawl(seeds, tmp / "data", settings, timeout=120)
        assert result.returncode == 0, result.log[-3000:]
    files = warc_files(tmp / "warc")
    assert len(files) >= 2, "WARC_MAX_SIZE rotated no file"
    (tmp / "pywb").mkdir()
    make_collection(tmp / "pywb", files)
    by_url = {
        r.headers["WARC-Target-URI"]: r
        for r in fetch_records(folder_records(tmp / "warc")).values()
    }
    wayback = Wayback(tmp / "pywb").start()
    try:
        yield wayback, twins, by_url
    finally:
        wayback.stop()


def timestamp(record: Record) -> str:
    """The record's 14-digit replay timestamp (WARC-Date to the second)."""
    return re.sub(r"\D", "", record.headers["WARC-Date"])[:14]


def profile(record: Record) -> str | None:
    return record.headers.get("WARC-Profile")


def test_every_response_replays_the_served_body(replayed) -> None:
    wayback, twins, by_url = replayed
    responses = 0
    for path, (kind, body) in pages().items():
        record = by_url[twins.url(path)]
        if record.kind != "response":
            continue
        responses += 1
        url = wayback.replay_url(timestamp(record), twins.url(path), "id_")
        status, headers, replayed_body = wayback.get(url)
        assert status == 200, (path, replayed_body[-500:])
        assert replayed_body == body, path
        assert headers["Content-Type"] == kind
        assert headers["Memento-Datetime"]  # the capture, not a live fetch
    assert responses >= 4


def test_identical_payload_revisits_replay_their_original(replayed) -> None:
    """/ref, /lib and the other unknown paths answer one 404 body: after the first, each is
    a revisit, which pywb replays with its original's status and body."""
    wayback, _, by_url = replayed
    revisits = [(url, r) for url, r in by_url.items() if profile(r) == IDENTICAL_PROFILE]
    files = set()
    for url, record in revisits:
        original = by_url[record.headers["WARC-Refers-To-Target-URI"]]
        files.add((original.file, record.file))
        status, _, body = wayback.get(wayback.replay_url(timestamp(record), url, "id_"))
        assert (str(status), body) == (original.http_status, original.payload), url
    assert any(a != b for a, b in files), "no revisit in another file than its original"


def test_near_duplicate_revisits_are_not_resolved(replayed) -> None:
    """pywb finds a revisit's original by identical digest; a near duplicate's differs
    (README "Replaying a crawl in pywb" says so)."""
    wayback, _, by_url = replayed
    near = [(url, r) for url, r in by_url.items() if profile(r) == NEAR_DUPLICATE_PROFILE]
    assert near
    for url, record in near:
        status, _, body = wayback.get(wayback.replay_url(timestamp(record), url, "id_"))
        assert status == 503 and b"Original for revisit record could not be loaded" in body


def test_chromium_loads_a_rewritten_replay(replayed) -> None:
    """Without id_ pywb rewrites the page (its WB Insert with wombat.js); Chromium runs it."""
    wayback, twins, by_url = replayed
    url = twins.url("/doc")
    html = pages()["/doc"][1].decode()
    title = re.search(r"<title>(.*?)</title>", html, re.S)
    heading = re.search(r"<h1>(.*?)</h1>", html, re.S)
    assert title and heading
    proc = run_chromium(["--dump-dom", wayback.replay_url(timestamp(by_url[url]), url)])
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "<!-- WB Insert -->" in dom and "/static/wombat.js" in dom, dom[:2000]
    assert f"<title>{title.group(1)}</title>" in dom
    assert f"<h1>{heading.group(1)}</h1>" in dom
