"""WARC files being written: names, rotation, and what a crash leaves behind.

A file is written in the local staging folder under its final name plus ".open",
one gzip member per record, flushed after every fetch, and held under an exclusive
flock for as long as this process owns it (the kernel drops the lock when the process
dies). At WARC_MAX_SIZE, or when the spider closes, the file is closed and handed to
the uploader (storage.py), still locked; it leaves the staging folder only once stored.

A ".open" file that nobody holds is a crashed worker's: the next start finishes it
(`recover`): it cuts the file after its last complete gzip member (a record the dead
process was writing is dropped whole), then stores it like any closed file; a file
holding nothing but its warcinfo record is discarded.

Names: <WARC_PREFIX>-<UTC time opened, ms>-<serial>-<worker>.warc.gz, the worker being
SEEN_WORKER_ID when set, else <hostname>-<pid>: workers never share a file.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import socket
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from warcio.warcwriter import WARCWriter

if TYPE_CHECKING:
    from warcio.recordloader import ArcWarcRecord

logger = logging.getLogger(__name__)

OPEN_SUFFIX = ".open"
WARC_SUFFIX = ".warc.gz"
_CHUNK_BYTES = 1 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")


def worker_name(configured: str = "") -> str:
    """The worker part of a file name: the crawl's worker id, else hostname-pid."""
    if configured:
        return _UNSAFE.sub("-", configured)
    return f"{_UNSAFE.sub('-', socket.gethostname())}-{os.getpid()}"


def file_name(prefix: str, serial: int, worker: str, now: datetime | None = None) -> str:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    stamp = moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"
    return f"{prefix}-{stamp}-{serial:05d}-{worker}{WARC_SUFFIX}"


@dataclass
class Located:
    """Where a record went: file name, offset of its gzip member, member length."""

    name: str
    offset: int
    length: int


class OpenWarc:
    """One file being written (or finished), locked by this process."""

    def __init__(self, path: Path, handle: IO[bytes]) -> None:
        self.path = path
        self.handle = handle
        self.name = path.name.removesuffix(OPEN_SUFFIX)
        self.writer = WARCWriter(handle, gzip=True, warc_version="1.1")
        self.records = 0

    @classmethod
    def create(cls, staging: Path, name: str) -> OpenWarc:
        path = staging / (name + OPEN_SUFFIX)
        handle = open(path, "xb")  # noqa: SIM115 - held open (and locked) until stored
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        return cls(path, handle)

    @classmethod
    def claim(cls, path: Path) -> OpenWarc | None:
        """An orphan, locked for this process; None while a live process holds it."""
        try:
            handle = open(path, "r+b")  # noqa: SIM115
        except FileNotFoundError:
            return None  # finished by another worker in between
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        return cls(path, handle)

    @property
    def size(self) -> int:
        return self.handle.tell()

    def write(self, records: list[ArcWarcRecord]) -> list[Located]:
        """Write records, flushed: a row that follows is never ahead of its record."""
        found = []
        for record in records:
            start = self.handle.tell()
            self.writer.write_record(record)
            found.append(Located(self.name, start, self.handle.tell() - start))
        self.handle.flush()
        self.records += len(records)
        return found

    def finish(self) -> None:
        self.handle.flush()
        os.fsync(self.handle.fileno())  # the upload reads what is on disk

    def release(self) -> None:
        """Drop the lock (closing the handle); the staged path goes if still there."""
        self.path.unlink(missing_ok=True)
        self.handle.close()


def complete_members(handle: IO[bytes]) -> tuple[int, int]:
    """(bytes up to the end of the last complete gzip member, members) of a file."""
    handle.seek(0)
    end = members = offset = 0
    data = b""
    member = zlib.decompressobj(31)
    while True:
        if not data:
            data = handle.read(_CHUNK_BYTES)
            if not data:
                return end, members
        try:
            member.decompress(data)
        except zlib.error:
            return end, members
        if member.eof:
            offset += len(data) - len(member.unused_data)
            end, members = offset, members + 1
            data = member.unused_data
            member = zlib.decompressobj(31)
        else:
            offset += len(data)
            data = b""


def recover(staging: Path) -> list[OpenWarc]:
    """Crashed workers' files, cut after their last whole record and locked for storing;
    files with no record after their warcinfo are discarded."""
    found = []
    for path in sorted(staging.glob(f"*{WARC_SUFFIX}{OPEN_SUFFIX}")):
        orphan = OpenWarc.claim(path)
        if orphan is None:
            continue
        end, members = complete_members(orphan.handle)
        if members <= 1:
            logger.info("Discarding WARC file %s: no record after its warcinfo", orphan.name)
            orphan.release()
            continue
        orphan.handle.truncate(end)
        orphan.handle.seek(end)
        orphan.records = members
        logger.info("Finishing WARC file %s left open: %d records kept", orphan.name, members)
        found.append(orphan)
    return found
