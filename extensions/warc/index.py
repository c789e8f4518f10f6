"""CDXJ index per WARC file, and the WARC locations of metadata rows read from them.

Each closed file gets <name>.cdxj beside it (cdxj-indexer: SURT key, 14-digit time,
JSON with url, mime, status, digest, length, offset, filename, as pywb reads it), with
one more field, "warc-date", the record's full WARC-Date. The index is stored after its
WARC file, so an index names only stored records: it is the crawl's table of WARC
locations. A row and its record share final_url and instant (records.warc_date of the
row's fetched_at), which is how `scrapy replay` puts warc_file/warc_offset/warc_length
on rows (crawlproj/pipelines/warc.py says why the crawl's own rows cannot carry them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from io import BytesIO
from typing import TYPE_CHECKING, Any

from cdxj_indexer.main import CDXJIndexer
from warcio.archiveiterator import ArchiveIterator

from extensions.warc.records import warc_date
from extensions.warc.storage import INDEX_SUFFIX

if TYPE_CHECKING:
    from pathlib import Path

    from extensions.warc.storage import WarcStore

# Record types a row's fetch is archived as (requests are indexed by neither).
FETCH_RECORDS = "response,revisit"


def write_cdxj(warc_path: Path, index_path: Path, name: str) -> None:
    """A sorted CDXJ index of the file's response and revisit records."""
    indexer = CDXJIndexer(
        output=str(index_path),
        inputs=[str(warc_path)],
        sort=True,
        fields="warc-date",
        records=FETCH_RECORDS,
        filename=name,
    )
    indexer.process_all()


@dataclass(frozen=True)
class Location:
    file: str  # the stored file's full URI (WARC_URI/<name>)
    offset: int
    length: int
    status: str | None
    mime: str | None


def parse_line(line: str) -> tuple[str, str, dict[str, Any]] | None:
    parts = line.split(" ", 2)
    if len(parts) != 3 or not parts[2].startswith("{"):
        return None
    return parts[0], parts[1], json.loads(parts[2])


def read_locations(store: WarcStore) -> dict[tuple[str, str], Location]:
    """(url, WARC-Date) -> where its record is, from every index in the store."""
    found: dict[tuple[str, str], Location] = {}
    for name in store.names():
        if not name.endswith(INDEX_SUFFIX):
            continue
        for line in store.read(name).decode("utf-8").splitlines():
            parsed = parse_line(line)
            if parsed is None:
                continue
            fields = parsed[2]
            key = (fields["url"], fields.get("warc-date", ""))
            found[key] = Location(
                store.ref(fields["filename"]),
                int(fields["offset"]),
                int(fields["length"]),
                fields.get("status"),
                fields.get("mime"),
            )
    return found


def row_key(row: dict[str, Any]) -> tuple[str, str] | None:
    """The (url, WARC-Date) of a row's record."""
    if not row.get("final_url") or not row.get("fetched_at"):
        return None
    return row["final_url"], warc_date(row["fetched_at"])


def read_record(data: bytes) -> tuple[str, dict[str, str], bytes]:
    """(record type, WARC headers, HTTP payload) of one gzip member holding a record."""
    for record in ArchiveIterator(BytesIO(data)):
        headers = dict(record.rec_headers.headers)
        return record.rec_type, headers, record.content_stream().read()
    raise ValueError("no WARC record at this location")


class WarcLocations:
    """Rows' WARC locations and bodies, from the stored indexes of one WARC_URI."""

    def __init__(self, store: WarcStore) -> None:
        self.store = store
        self.by_key = read_locations(store)
        self._names = {loc.file: loc.file.rpartition("/")[2] for loc in self.by_key.values()}

    def of(self, row: dict[str, Any]) -> Location | None:
        key = row_key(row)
        return None if key is None else self.by_key.get(key)

    def body(self, location: Location) -> bytes | None:
        """The payload of a response record, or of the record an identical-payload
        revisit refers to; None for other revisits (no payload of their own)."""
        data = self.store.read(self._names[location.file], location.offset, location.length)
        kind, headers, payload = read_record(data)
        if kind == "response":
            return payload
        if headers.get("WARC-Profile", "").endswith("/identical-payload-digest"):
            key = (
                headers.get("WARC-Refers-To-Target-URI", ""),
                headers.get("WARC-Refers-To-Date", ""),
            )
            original = self.by_key.get(key)
            if original is not None and original != location:
                return self.body(original)
        return None
