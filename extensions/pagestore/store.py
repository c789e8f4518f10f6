"""Page store: fetched bodies, gzip-compressed, under content-addressed keys.

One interface (``PageStore``), two backends with the same layout:

    PAGESTORE_URI = s3://bucket/prefix   ->  s3://bucket/prefix/ab/ab12...ef.html.gz
    PAGESTORE_URI = file:///abs/folder   ->  /abs/folder/ab/ab12...ef.html.gz
    (empty: file:// + CRAWL_DATA_DIR/pages)

The key is the sha256 of the raw body bytes (as received, after transfer
decoding), so identical bodies share one object and a re-upload is a no-op:
``put`` looks first and returns False when the key already exists. Objects are
gzip with mtime 0, so the same body always gives the same bytes (and ETag).

A row's ``content_ref`` is the object's full URI (``store.ref(key)``): it names
the backend, the bucket and the key, so ``scrapy replay`` can read a body back
without knowing which PAGESTORE_URI the crawl used.

S3 goes through boto3 with Scrapy's own AWS_* settings (the ones S3FeedStorage
reads), so a feed on s3:// and the page store share one configuration.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote, urlsplit

from extensions.state.connection import data_dir_from_settings

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

HTML_SUFFIX = ".html.gz"
OTHER_SUFFIX = ".gz"
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


class StoreUnavailable(RuntimeError):
    """The page store cannot take or give bodies; the message is one line saying why."""


class PageStore(Protocol):
    """Where bodies go. Keys are relative ("ab/<sha256>.html.gz"); data is opaque bytes."""

    uri: str  # the store's root, e.g. s3://bucket/prefix or file:///abs/folder

    def put(self, key: str, data: bytes) -> bool:
        """Store data under key; True if written, False if the key already existed."""
        ...

    def get(self, key: str) -> bytes:
        """The bytes stored under key (KeyError when there are none)."""
        ...

    def exists(self, key: str) -> bool: ...

    def check(self) -> None:
        """Raise StoreUnavailable (one line) unless put/get can work."""
        ...

    def ref(self, key: str) -> str:
        """The full URI of key, as recorded in a row's content_ref."""
        ...


# ---- keys and payloads -----------------------------------------------------------


def is_html_type(content_type: str | None) -> bool:
    # No Content-Type at all: treated as HTML, like the spider does.
    return content_type is None or content_type in HTML_TYPES


def content_key(body: bytes, content_type: str | None = None) -> str:
    """Content-addressed key of a raw body: <sha256[:2]>/<sha256><suffix>.

    The 2-hex-digit fan-out keeps folders (and S3 listing prefixes) small.
    """
    digest = hashlib.sha256(body).hexdigest()
    suffix = HTML_SUFFIX if is_html_type(content_type) else OTHER_SUFFIX
    return f"{digest[:2]}/{digest}{suffix}"


def pack_body(body: bytes) -> bytes:
    """gzip with mtime 0: the same body always packs to the same bytes."""
    return gzip.compress(body, compresslevel=6, mtime=0)


def unpack_body(data: bytes) -> bytes:
    return gzip.decompress(data)


def split_ref(ref: str) -> tuple[str, str]:
    """(store URI, key) of a content_ref: the key is its last two path segments."""
    root, sep, name = ref.rpartition("/")
    root, sep2, fan = root.rpartition("/")
    if not (sep and sep2 and root and fan and name):
        raise ValueError(f"not a page store reference: {ref!r}")
    return root, f"{fan}/{name}"


# ---- local folder -------------------------------------------------------------------


class FilePageStore:
    """Bodies in a local folder; each write goes to a temp file renamed into place,
    so a reader never sees a half-written object (rename is atomic on POSIX).

    No fsync: a killed crawl keeps everything renamed before it died; surviving a
    power cut needs S3 (or a filesystem mounted with sync).
    """

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
                f"PAGESTORE_URI {self.uri} is not writable ({exc.strerror or exc}); "
                f"fix the folder's permissions or point PAGESTORE_URI elsewhere"
            ) from None

    def ref(self, key: str) -> str:
        return f"{self.uri}/{key}"


# ---- construction from settings --------------------------------------------------------


def default_store_uri(settings: BaseSettings) -> str:
    return "file://" + str(data_dir_from_settings(settings) / "pages")


def store_uri(settings: BaseSettings) -> str:
    return settings.get("PAGESTORE_URI") or default_store_uri(settings)


def open_store(uri: str, settings: BaseSettings) -> PageStore:
    """A PageStore for an s3:// or file:/// URI (ValueError naming PAGESTORE_URI)."""
    parts = urlsplit(uri)
    if parts.scheme == "s3":
        if not parts.netloc:
            raise ValueError(f"PAGESTORE_URI {uri}: no bucket; use s3://bucket/prefix")
        from extensions.pagestore.s3 import S3PageStore

        return S3PageStore.from_settings(parts.netloc, parts.path.strip("/"), settings)
    if parts.scheme == "file":
        path = unquote(parts.path)
        if parts.netloc not in ("", "localhost") or not path.startswith("/"):
            raise ValueError(
                f"PAGESTORE_URI {uri}: a file store needs an absolute path, file:///abs/folder"
            )
        return FilePageStore(Path(path.rstrip("/") or "/"))
    raise ValueError(f"PAGESTORE_URI {uri}: unsupported scheme; use s3://bucket/prefix or file:///")


def store_from_settings(settings: BaseSettings) -> PageStore:
    return open_store(store_uri(settings), settings)


def check_store(settings: BaseSettings) -> None:
    """Start-up check (crawl preflight): StoreUnavailable or ValueError, one line."""
    store_from_settings(settings).check()


class StoreCache:
    """Stores opened by URI, for readers of rows from several stores (replay)."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings
        self._stores: dict[str, PageStore] = {}

    def read_ref(self, ref: str) -> bytes:
        """The original body behind a content_ref (KeyError when it is missing)."""
        root, key = split_ref(ref)
        store = self._stores.get(root)
        if store is None:
            store = self._stores[root] = open_store(root, self.settings)
        return unpack_body(store.get(key))


def one_line(exc: BaseException) -> str:
    """An exception as one short line for operators."""
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
