"""Where closed WARC files go: the page store's backends, named by WARC_URI.

    WARC_URI = s3://bucket/prefix   ->  s3://bucket/prefix/<name>.warc.gz (+ .cdxj)
    WARC_URI = file:///abs/folder   ->  /abs/folder/<name>.warc.gz (+ .cdxj)
    (empty: file:// + CRAWL_DATA_DIR/warc)

S3 goes through the page store's client (Scrapy's AWS_* settings, no botocore retries);
boto3's upload_file sends a large file in parts. A file store renames the staged file
into place when both folders share a filesystem, else copies it to a temporary name in
the folder first: a reader never sees half a file.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote, urlsplit

from botocore.exceptions import ClientError

from extensions.pagestore.file import FilePageStore
from extensions.pagestore.s3 import S3PageStore, s3_client
from extensions.state.connection import data_dir_from_settings

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

SETTING = "WARC_URI"
INDEX_SUFFIX = ".cdxj"


class WarcStore(Protocol):
    uri: str

    def check(self) -> None:
        """Raise StoreUnavailable (one line naming WARC_URI) unless files can be stored."""
        ...

    def put_file(self, name: str, path: Path) -> None:
        """Store the file at path under name; path may be gone afterwards (moved)."""
        ...

    def names(self) -> list[str]:
        """Names of the stored files (WARC files and their indexes)."""
        ...

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes: ...

    def ref(self, name: str) -> str: ...


class FileWarcStore(FilePageStore):
    setting = SETTING

    def put_file(self, name: str, path: Path) -> None:
        target = self.root / name
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(path, target)
            return
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
        os.close(fd)
        try:
            shutil.copyfile(path, tmp)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if not p.name.startswith("."))

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes:
        try:
            with open(self.root / name, "rb") as handle:
                handle.seek(offset)
                return handle.read(-1 if length is None else length)
        except FileNotFoundError:
            raise KeyError(name) from None


class S3WarcStore(S3PageStore):
    setting = SETTING

    def put_file(self, name: str, path: Path) -> None:
        self.client.upload_file(str(path), self.bucket, self._key(name))

    def names(self) -> list[str]:
        prefix = f"{self.prefix}/" if self.prefix else ""
        found: list[str] = []
        pages = self.client.get_paginator("list_objects_v2")
        for page in pages.paginate(Bucket=self.bucket, Prefix=prefix, Delimiter="/"):
            found += [obj["Key"][len(prefix) :] for obj in page.get("Contents", [])]
        return sorted(found)

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes:
        extra = {}
        if offset or length is not None:
            end = "" if length is None else str(offset + length - 1)
            extra["Range"] = f"bytes={offset}-{end}"
        try:
            reply = self.client.get_object(Bucket=self.bucket, Key=self._key(name), **extra)
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code", "")) in ("404", "NoSuchKey"):
                raise KeyError(name) from None
            raise
        return bytes(reply["Body"].read())


def default_warc_uri(settings: BaseSettings) -> str:
    return "file://" + str(data_dir_from_settings(settings) / "warc")


def warc_uri(settings: BaseSettings) -> str:
    return settings.get("WARC_URI") or default_warc_uri(settings)


def open_warc_store(uri: str, settings: BaseSettings) -> WarcStore:
    """A WarcStore for an s3:// or file:/// URI (ValueError naming WARC_URI)."""
    parts = urlsplit(uri)
    if parts.scheme == "s3":
        if not parts.netloc:
            raise ValueError(f"{SETTING} {uri}: no bucket; use s3://bucket/prefix")
        return S3WarcStore(parts.netloc, parts.path.strip("/"), s3_client(settings))
    if parts.scheme == "file":
        path = unquote(parts.path)
        if parts.netloc not in ("", "localhost") or not path.startswith("/"):
            raise ValueError(
                f"{SETTING} {uri}: a file store needs an absolute path, file:///abs/folder"
            )
        return FileWarcStore(Path(path.rstrip("/") or "/"))
    raise ValueError(f"{SETTING} {uri}: unsupported scheme; use s3://bucket/prefix or file:///")
