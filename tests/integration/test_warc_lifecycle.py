"""WARC output across crawls: a re-crawl pass writes revisits, files land in S3 (moto's
server), a crawl killed mid-file is finished by the next start, bad input stops the
crawl before it starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from extensions.warc.files import complete_members
from extensions.warc.records import IDENTICAL_PROFILE, NOT_MODIFIED_PROFILE
from scripts.crawlrun import PROJECT_ROOT, crawl_command, run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.s3_support import MotoServer, free_port
from tests.integration.warc_support import (
    fetch_records,
    folder_records,
    read_records,
    replay,
    row_key,
    warcio_check,
)

DELAY = 0.2
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")


def scrapy(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "scrapy", *args, "-s", f"CRAWL_DATA_DIR={data_dir}"]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)


def base_settings(web: TestWeb, tmp: Path, **extra: Any) -> dict[str, Any]:
    return {
        "DNS_HOSTS_MAP": web.hosts_map_setting(),
        "FRONTIER_DELAY": DELAY,
        "WARC_ENABLED": True,
        "WARC_URI": f"file://{tmp}/warc",
        **extra,
    }


def test_a_recrawl_pass_writes_revisits(tmp_path: Path) -> None:
    """304s are server-not-modified revisits, unchanged 200s identical-payload ones, each
    naming the first pass's record."""
    spec = WebSpec(
        hosts=[HostSpec("cond.test", pages=3, validators=True), HostSpec("plain.test", pages=3)]
    )
    with TestWeb(spec, lifetime=200) as web:
        settings = base_settings(web, tmp_path)
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        first = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        assert first.returncode == 0, first.log[-3000:]
        marked = scrapy("recrawl", "--all", data_dir=tmp_path / "data")
        assert marked.returncode == 0, marked.stderr
        again = run_crawl(None, tmp_path / "data", settings, timeout=120)
        assert again.returncode == 0, again.log[-3000:]
    records = fetch_records(folder_records(tmp_path / "warc"))
    firsts = {row["url"]: records[row_key(row)] for row in first.items}
    kinds = {"not_modified": NOT_MODIFIED_PROFILE, "unchanged": IDENTICAL_PROFILE}
    assert {row["change"] for row in again.items} == set(kinds), again.items
    for row in again.items:
        record, original = records[row_key(row)], firsts[row["url"]]
        assert record.kind == "revisit" and record.headers["WARC-Profile"] == kinds[row["change"]]
        assert record.headers["WARC-Refers-To-Target-URI"] == original.headers["WARC-Target-URI"]
        assert record.headers["WARC-Refers-To-Date"] == original.headers["WARC-Date"]
        assert record.headers["WARC-Refers-To"] == original.headers["WARC-Record-ID"]
        assert record.headers["WARC-Payload-Digest"] == original.headers["WARC-Payload-Digest"]
    check = warcio_check(sorted((tmp_path / "warc").glob("*.warc.gz")))
    assert check.returncode == 0, check.stdout[-2000:]


def test_closed_files_land_in_s3(moto_s3: MotoServer, tmp_path: Path) -> None:
    bucket = "warc-bucket"
    moto_s3.client().create_bucket(Bucket=bucket)
    spec = WebSpec(hosts=[HostSpec("alpha.test", pages=4), HostSpec("beta.test", pages=4)])
    with TestWeb(spec, lifetime=200) as web:
        s3 = moto_s3.settings("", endpoint=None)
        s3.pop("PAGESTORE_URI")
        settings = base_settings(web, tmp_path, WARC_URI=f"s3://{bucket}/crawl", **s3)
        settings["WARC_MAX_SIZE"] = 8192
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        assert result.returncode == 0, result.log[-3000:]
    keys = sorted(moto_s3.keys(bucket, "crawl/"))
    warcs = [k for k in keys if k.endswith(".warc.gz")]
    assert len(warcs) >= 2 and keys == sorted([*warcs, *(k + ".cdxj" for k in warcs)])
    records = []
    for key in warcs:
        body = moto_s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()
        (tmp_path / key.rpartition("/")[2]).write_bytes(body)
        records += read_records(body, key.rpartition("/")[2])
    assert warcio_check(sorted(tmp_path.glob("*.warc.gz"))).returncode == 0
    assert set(fetch_records(records)) == {row_key(row) for row in result.items}
    assert list((tmp_path / "data" / "warc-open").iterdir()) == []
    _, replayed = replay([tmp_path / "data" / "items.jsonl"], tmp_path / "out.jsonl", settings)
    assert all(r["warc_file"].startswith(f"s3://{bucket}/crawl/") for r in replayed)


def test_a_killed_crawl_leaves_no_row_pointing_at_an_unstored_file(tmp_path: Path) -> None:
    """kill -9 mid-file: the rows written carry no WARC location; the next start finishes
    the file left open (cut after its last whole record) and stores it, and then every
    row located by the stored indexes points at its own record."""
    spec = WebSpec(hosts=[HostSpec(f"h{i}.test", pages=12, latency_ms=50) for i in range(2)])
    data = tmp_path / "data"
    with TestWeb(spec, lifetime=300) as web:
        # A dead worker's leases expire in seconds, so the restart re-fetches its pages.
        fast = {"DOWNLOAD_TIMEOUT": 3, "FRONTIER_LEASE_TTL": 5}
        settings = base_settings(web, tmp_path, WARC_MAX_SIZE=6000, **fast)
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        cmd = crawl_command(seeds, data, settings, tmp_path / "first.jsonl")
        proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        staged = data / "warc-open"
        started = time.monotonic()
        # Mid-file: a file stored (rotation works), another open with a record past its
        # warcinfo (one with only its warcinfo is discarded at restart, not finished);
        # after a rotation no file is open until the next fetch, so the check runs right
        # before the kill.
        while (
            time.monotonic() < started + 1.0
            or not list((tmp_path / "warc").glob("*.warc.gz"))
            or not any(records_in(path) > 1 for path in staged_open(staged))
        ):
            assert proc.poll() is None and time.monotonic() < started + 90, "no file in time"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        first = whole_rows(tmp_path / "first.jsonl")
        assert staged_open(staged) and all(r["warc_file"] is None for r in first)
        left_open = {p.name.removesuffix(".open") for p in staged_open(staged)}
        again = run_crawl(None, data, settings, timeout=120)
        assert again.returncode == 0, again.log[-3000:]
    assert "Finishing WARC file" in again.log
    assert not staged_open(staged)
    stored = {p.name for p in (tmp_path / "warc").glob("*.warc.gz")}
    assert left_open <= stored
    assert warcio_check(sorted((tmp_path / "warc").glob("*.warc.gz"))).returncode == 0
    items = [tmp_path / "first.jsonl", data / "items.jsonl"]
    _, replayed = replay(items, tmp_path / "out.jsonl", settings)
    located = [r for r in replayed if r["warc_file"]]
    assert len(located) >= len(first) // 2  # the killed pass's rows are found too
    for row in located:
        path = Path(row["warc_file"].removeprefix("file://"))
        assert path.name in stored
        with open(path, "rb") as handle:
            handle.seek(row["warc_offset"])
            record = read_records(handle.read(row["warc_length"]), path.name)[0]
        assert record.key == row_key(row)


def whole_rows(path: Path) -> list[dict[str, Any]]:
    """The rows a killed crawl's feed holds, rewritten without a line cut short."""
    rows = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


def staged_open(staged: Path) -> list[Path]:
    return sorted(staged.glob("*.open")) if staged.is_dir() else []


def records_in(path: Path) -> int:
    """Whole gzip members (WARC records) of a file being written; 0 once it is gone."""
    try:
        with open(path, "rb") as handle:
            return complete_members(handle)[1]
    except FileNotFoundError:
        return 0


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("file:///proc/warc", "WARC_URI file:///proc/warc is not writable"),
        ("ftp://host/warc", "WARC_URI ftp://host/warc: unsupported scheme"),
        ("s3://warc-bucket/x", "WARC_URI s3://warc-bucket/x (endpoint http://127.0.0.1:"),
    ],
)
def test_bad_input_stops_the_crawl_before_it_starts(
    tmp_path: Path, uri: str, expected: str
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    settings = {"WARC_ENABLED": True, "WARC_URI": uri, "AWS_ENDPOINT_URL": dead}
    settings.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    cmd = crawl_command("http://a.test/", tmp_path / "data", settings, None)
    proc = subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("crawlproj: ")]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert expected in lines[0] and "Traceback" not in proc.stderr
    assert "Spider opened" not in proc.stderr  # stopped before it started
