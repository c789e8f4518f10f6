"""pywb for tests: a collection made from a crawl's WARC files, served by `wayback` on
127.0.0.1, to check that what the crawl wrote replays in the field's reference player.

pywb pins libraries the project's .venv cannot share (redis 2, fakeredis 0.16), so it
lives in .venv-pywb/ (scripts/bootstrap, requirements-pywb.txt). The server is our own
subprocess under `timeout` (it ends by itself if the test hangs) with PR_SET_PDEATHSIG
(it ends with the test process, however that dies), and it is stopped by PID.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import pytest

from scripts.crawlrun import PROJECT_ROOT
from tests.integration.s3_support import free_port

PYWB_BIN = PROJECT_ROOT / ".venv-pywb" / "bin"
COLLECTION = "crawl"
LIFETIME_S = 300
# Unframed replay: the rewritten page is the top document (not an iframe of pywb's
# banner), so a browser's DOM dump holds the archived page itself.
CONFIG = "framed_replay: false\n"


def pywb_tool(name: str) -> Path:
    path = PYWB_BIN / name
    if not path.is_file():
        pytest.fail(f"{path} missing: run scripts/bootstrap (it installs requirements-pywb.txt)")
    return path


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def make_collection(root: Path, warcs: list[Path]) -> None:
    """`wb-manager init` + `add` under root: copies the files and indexes them."""
    manager = str(pywb_tool("wb-manager"))
    for args in (["init", COLLECTION], ["add", COLLECTION, *map(str, warcs)]):
        proc = subprocess.run(
            [manager, *args], cwd=root, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, f"wb-manager {args[0]}: {proc.stderr[-2000:]}"
    (root / "config.yaml").write_text(CONFIG)


@dataclass
class Wayback:
    """`wayback` on 127.0.0.1:<free port> over the collection under root."""

    root: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.root / "wayback.log"

    def replay_url(self, timestamp: str, url: str, modifier: str = "") -> str:
        """The archived url nearest timestamp; modifier id_ = the original body as is."""
        return f"http://127.0.0.1:{self.port}/{COLLECTION}/{timestamp}{modifier}/{url}"

    def start(self, timeout_s: float = 30.0) -> Self:
        self.port = free_port()
        wayback = [str(pywb_tool("wayback")), "-b", "127.0.0.1", "-p", str(self.port)]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                ["timeout", str(LIFETIME_S), *wayback],
                cwd=self.root,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"wayback exited: {self.log_path.read_text()[-2000:]}")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=2).close()
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"wayback did not answer in {timeout_s}s: {self.log_path.read_text()}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()  # `timeout` passes SIGTERM on to wayback
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # `timeout` leads its own process group
            proc.wait()

    def get(self, url: str) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of a replay URL; pywb's error statuses included."""
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                return answer.status, dict(answer.headers), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()
