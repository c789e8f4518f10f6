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
from typing import Protocol

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


def one_line(exc: BaseException) -> str:
    """An exception as one short line for operators."""
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
