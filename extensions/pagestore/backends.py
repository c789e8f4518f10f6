"""Which page store a PAGESTORE_URI names (s3:// or file:///), opened from settings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from extensions.pagestore.file import FilePageStore
from extensions.pagestore.protocol import PageStore, split_ref, unpack_body
from extensions.pagestore.s3 import S3PageStore
from extensions.state.connection import data_dir_from_settings

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


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
