"""The page store in a local folder (PAGESTORE_URI = file:///abs/folder; the default,
under CRAWL_DATA_DIR/pages): the layout is the one extensions.pagestore.protocol describes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from extensions.pagestore.protocol import StoreUnavailable


class FilePageStore:
    """Bodies in a local folder; each write goes to a temp file renamed into place,
    so a reader never sees a half-written object (rename is atomic on POSIX).

    No fsync: a killed crawl keeps everything renamed before it died; surviving a
    power cut needs S3 (or a filesystem mounted with sync).
    """

    setting = "PAGESTORE_URI"  # named in errors (the WARC store shares this class)

    def __init__(self, root: Path) -> None:
        self.root = root
        self.uri = "file://" + str(root)

    def _path(self, key: str) -> Path:
        return self.root / key

    def put(self, key: str, data: bytes) -> bool:
        path = self._path(key)
        if path.exists():
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return True

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise KeyError(key) from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def check(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".check-")
            os.close(fd)
            os.unlink(tmp)
        except OSError as exc:
            raise StoreUnavailable(
                f"{self.setting} {self.uri} is not writable ({exc.strerror or exc}); "
                f"fix the folder's permissions or point {self.setting} elsewhere"
            ) from None

    def ref(self, key: str) -> str:
        return f"{self.uri}/{key}"
