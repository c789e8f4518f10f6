"""Page store: key layout, gzip payloads, the file backend, URIs from settings."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest
from scrapy.settings import Settings

from extensions.pagestore.backends import StoreCache, open_store, store_from_settings
from extensions.pagestore.file import FilePageStore
from extensions.pagestore.protocol import (
    StoreUnavailable,
    content_key,
    pack_body,
    split_ref,
    unpack_body,
)
from tests.project_settings import project_settings

BODY = b"<html><body><p>Hello \xc3\xa9t\xc3\xa9</p></body></html>"


def test_keys_are_the_sha256_of_the_raw_body_fanned_out_by_two_hex_digits() -> None:
    digest = hashlib.sha256(BODY).hexdigest()
    assert content_key(BODY, "text/html") == f"{digest[:2]}/{digest}.html.gz"
    assert content_key(BODY, None) == f"{digest[:2]}/{digest}.html.gz"
    assert content_key(BODY, "application/pdf") == f"{digest[:2]}/{digest}.gz"
    assert content_key(BODY + b" ", "text/html") != content_key(BODY, "text/html")


def test_gzip_round_trip_is_deterministic() -> None:
    packed = pack_body(BODY)
    assert unpack_body(packed) == BODY == gzip.decompress(packed)
    assert pack_body(BODY) == packed  # mtime 0: same body, same object bytes
    big = b"x" * 100_000
    assert len(pack_body(big)) < len(big) // 50


def test_file_store_put_is_idempotent_and_atomic(tmp_path: Path) -> None:
    store = FilePageStore(tmp_path / "pages")
    store.check()
    key = content_key(BODY, "text/html")
    assert not store.exists(key)
    assert store.put(key, pack_body(BODY)) is True
    assert store.put(key, b"other bytes") is False  # content-addressed: never rewritten
    assert unpack_body(store.get(key)) == BODY
    assert store.exists(key)
    assert (tmp_path / "pages" / key).is_file()
    assert [p.name for p in (tmp_path / "pages").rglob(".tmp-*")] == []
    with pytest.raises(KeyError):
        store.get("00/" + "0" * 64 + ".html.gz")


def test_refs_name_the_store_and_read_back(tmp_path: Path) -> None:
    store = FilePageStore(tmp_path)
    key = content_key(BODY)
    store.put(key, pack_body(BODY))
    ref = store.ref(key)
    assert ref == f"file://{tmp_path}/{key}"
    assert split_ref(ref) == (f"file://{tmp_path}", key)
    assert split_ref(f"s3://bucket/a/b/{key}") == ("s3://bucket/a/b", key)
    assert StoreCache(Settings()).read_ref(ref) == BODY
    with pytest.raises(ValueError, match="not a page store reference"):
        split_ref("nothing")


def test_an_unwritable_folder_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreUnavailable) as info:
        FilePageStore(blocker / "pages").check()
    message = str(info.value)
    assert "PAGESTORE_URI file://" in message and "\n" not in message


def test_default_store_is_a_folder_in_the_data_dir(tmp_path: Path) -> None:
    store = store_from_settings(Settings({"CRAWL_DATA_DIR": str(tmp_path)}))
    assert isinstance(store, FilePageStore)
    assert store.uri == f"file://{tmp_path}/pages"


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("ftp://host/x", "unsupported scheme"),
        ("file://relative/path", "absolute path"),
        ("s3:///prefix", "no bucket"),
    ],
)
def test_bad_uris_name_the_setting(uri: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        open_store(uri, Settings())
    assert "PAGESTORE_URI" in str(info.value)


def test_s3_uri_keeps_bucket_and_prefix() -> None:
    settings = project_settings(
        {
            "AWS_ACCESS_KEY_ID": "k",
            "AWS_SECRET_ACCESS_KEY": "s",
            "AWS_REGION_NAME": "us-east-1",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:1",
        }
    )
    store = open_store("s3://bucket/a/b/", settings)
    assert store.uri == "s3://bucket/a/b"
    assert store.ref("ab/cd.html.gz") == "s3://bucket/a/b/ab/cd.html.gz"
