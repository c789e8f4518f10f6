"""Reading what a crawl wrote as WARC: records of stored files, `warcio check`, replay."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from extensions.warc.records import warc_date
from scripts.crawlrun import PROJECT_ROOT, read_items

WARCIO = Path(sys.executable).with_name("warcio")
FETCH_TYPES = ("response", "revisit")


@dataclass
class Record:
    file: str
    offset: int
    kind: str
    headers: dict[str, str]
    http_status: str | None
    payload: bytes

    @property
    def key(self) -> tuple[str, str]:
        return self.headers["WARC-Target-URI"], self.headers["WARC-Date"]


def read_records(data: bytes, name: str) -> list[Record]:
    found = []
    iterator = ArchiveIterator(BytesIO(data))
    for record in iterator:
        status = record.http_headers.get_statuscode() if record.http_headers else None
        payload = record.content_stream().read()
        found.append(
            Record(
                name,
                iterator.get_record_offset(),
                record.rec_type,
                dict(record.rec_headers.headers),
                status,
                payload,
            )
        )
    return found


def folder_records(folder: Path) -> list[Record]:
    return [r for path in warc_files(folder) for r in read_records(path.read_bytes(), path.name)]


def warc_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.warc.gz"))


def warcio_check(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    """`warcio check` verifies every record's block and payload digests."""
    cmd = [str(WARCIO), "check", "-v", *map(str, paths)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def fetch_records(records: list[Record]) -> dict[tuple[str, str], Record]:
    return {r.key: r for r in records if r.kind in FETCH_TYPES}


def row_key(row: dict[str, Any]) -> tuple[str, str]:
    return row["final_url"], warc_date(row["fetched_at"])


def replay(
    items: list[Path], out: Path, settings: dict[str, Any]
) -> tuple[str, list[dict[str, Any]]]:
    """(stderr, rows) of `scrapy replay` over the crawl's rows."""
    cmd = [sys.executable, "-m", "scrapy", "replay", *map(str, items), "-O", str(out)]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={json.dumps(value) if isinstance(value, dict) else value}"]
    proc = subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stderr, read_items(out)
