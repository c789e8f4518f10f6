"""Fixtures for the content-path tests: a moto S3 server (real HTTP on loopback)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.s3_support import MotoServer


@pytest.fixture(scope="module")
def moto_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """moto_server on 127.0.0.1, one per test module, stopped by PID at the end."""
    server = MotoServer(tmp_path_factory.mktemp("moto") / "moto.log").start()
    try:
        yield server
    finally:
        server.stop()
