"""The worker's WARC writer: the current file, rotation at WARC_MAX_SIZE, and storing.

Two threads, never the reactor: one writes records (gzip is CPU work; one thread keeps
a fetch's records together and in order), one stores closed files, so a 1 GB upload
does not stall writing. Storing a file: fsync, write its CDXJ index in the staging
folder, store the WARC file, then its index, then drop the staged copies and the lock.
A file that cannot be stored after STORE_ATTEMPTS stays staged, unlocked: the next
start stores it (files.recover).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from extensions.pagestore.protocol import one_line
from extensions.warc.files import Located, OpenWarc, file_name, recover
from extensions.warc.index import write_cdxj
from extensions.warc.storage import INDEX_SUFFIX

if TYPE_CHECKING:
    from warcio.recordloader import ArcWarcRecord

    from extensions.warc.storage import WarcStore

logger = logging.getLogger(__name__)

STORE_ATTEMPTS = 3
STORE_RETRY_DELAY_S = 1.0
_STORE_ERRORS = (BotoCoreError, ClientError, OSError)


class WarcWriter:
    """Writes fetches into <staging>/<name>.open and hands closed files to the store."""

    def __init__(
        self,
        store: WarcStore,
        staging: Path,
        prefix: str,
        worker: str,
        max_size: int,
        info: dict[str, str],
    ) -> None:
        self.store = store
        self.staging = staging
        self.prefix = prefix
        self.worker = worker
        self.max_size = max_size
        self.info = info
        self.serial = 0
        self.current: OpenWarc | None = None
        self.write_pool = ThreadPoolExecutor(1, thread_name_prefix="warc-write")
        self.store_pool = ThreadPoolExecutor(1, thread_name_prefix="warc-store")
        self.storing: list[Future[bool]] = []
        self.counts: dict[str, int] = {"stored": 0, "store_failed": 0, "recovered": 0}

    def start(self) -> None:
        """Store what crashed workers left open (after the store passed its check)."""
        self.staging.mkdir(parents=True, exist_ok=True)
        for orphan in recover(self.staging):
            self.counts["recovered"] += 1
            self._submit(orphan)

    # ---- write thread ----------------------------------------------------------------

    def write(self, records: list[ArcWarcRecord]) -> list[Located]:
        warc = self.current or self._open()
        located = warc.write(records)
        if warc.size >= self.max_size:
            self.rotate()
        return located

    def rotate(self) -> None:
        warc, self.current = self.current, None
        if warc is not None:
            self._submit(warc)

    def _open(self) -> OpenWarc:
        name = file_name(self.prefix, self.serial, self.worker)
        self.serial += 1
        warc = OpenWarc.create(self.staging, name)
        warc.write([warc.writer.create_warcinfo_record(name, self.info)])
        self.current = warc
        return warc

    # ---- store thread ----------------------------------------------------------------

    def _submit(self, warc: OpenWarc) -> None:
        self.storing.append(self.store_pool.submit(self._store, warc))

    def _store(self, warc: OpenWarc) -> bool:
        index = self.staging / (warc.name + INDEX_SUFFIX + ".tmp")
        delay = STORE_RETRY_DELAY_S
        try:
            warc.finish()
            write_cdxj(warc.path, index, warc.name)
            for attempt in range(1, STORE_ATTEMPTS + 1):
                try:
                    self._put(warc, index)
                    self.counts["stored"] += 1
                    logger.info("WARC file stored: %s", self.store.ref(warc.name))
                    return True
                except _STORE_ERRORS as exc:
                    reason = one_line(exc)
                    if attempt == STORE_ATTEMPTS:
                        raise
                    logger.debug("Storing %s failed (%s), retrying", warc.name, reason)
                    time.sleep(delay)
                    delay *= 2
        except _STORE_ERRORS as exc:
            self.counts["store_failed"] += 1
            logger.error(
                "WARC file %s not stored (%s); it stays in %s for the next start",
                warc.name, one_line(exc), self.staging,
            )  # fmt: skip
            warc.handle.close()  # unlocked, kept: files.recover finds it
            return False
        finally:
            index.unlink(missing_ok=True)
        raise AssertionError("unreachable")

    def _put(self, warc: OpenWarc, index: Path) -> None:
        # The WARC file first: an index only ever names stored records.
        if warc.path.exists():
            self.store.put_file(warc.name, warc.path)
        self.store.put_file(warc.name + INDEX_SUFFIX, index)
        warc.release()

    # ---- closing ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the current file, store everything, stop both threads (blocking)."""
        self.write_pool.submit(self.rotate).result()
        self.write_pool.shutdown(wait=True)
        for future in self.storing:
            future.result()
        self.store_pool.shutdown(wait=True)
