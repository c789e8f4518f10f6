"""Headless Chromium for tests (Debian package `chromium`), and a small PNG reader.

Chromium runs with a fresh profile, no network services of its own, and in its own
process group, which is killed (by that group id, ours) if it overstays its timeout.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
]


def chromium_binary() -> str:
    """The chromium binary; in CI its absence fails the test, elsewhere it skips."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    message = "chromium not installed: apt-get install -y chromium (.ci/run must install it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def run_chromium(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        cmd = [chromium_binary(), *FLAGS, f"--user-data-dir={profile}", *args]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own group: renderer and GPU helpers die with it
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError(f"chromium did not finish in {timeout}s: {cmd}") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def _chunks(data: bytes) -> dict[bytes, bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    pos, chunks = 8, {}
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        chunks[kind] = chunks.get(kind, b"") + data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return chunks


def _paeth(line: bytearray, prev: bytes, bpp: int) -> None:
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
        line[i] = (line[i] + pred) & 0xFF


def _unfilter(kind: int, line: bytearray, prev: bytes, bpp: int) -> None:
    if kind == 1:
        for i in range(bpp, len(line)):
            line[i] = (line[i] + line[i - bpp]) & 0xFF
    elif kind == 2:
        line[:] = ((np.frombuffer(line, np.uint8) + np.frombuffer(prev, np.uint8)) & 0xFF).tobytes()
    elif kind == 3:
        for i in range(len(line)):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + (left + prev[i]) // 2) & 0xFF
    elif kind == 4:
        _paeth(line, prev, bpp)


def read_png(path: Path) -> np.ndarray:
    """Pixels (height, width, channels) of an 8-bit, non-interlaced RGB/RGBA PNG."""
    chunks = _chunks(path.read_bytes())
    header = chunks[b"IHDR"]
    width, height = int.from_bytes(header[0:4], "big"), int.from_bytes(header[4:8], "big")
    depth, color, interlace = header[8], header[9], header[12]
    assert depth == 8 and color in (2, 6) and interlace == 0, "unsupported PNG variant"
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(chunks[b"IDAT"])
    stride = width * bpp
    rows, prev = [], bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        line = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(raw[start], line, prev, bpp)
        rows.append(bytes(line))
        prev = rows[-1]
    return np.frombuffer(b"".join(rows), np.uint8).reshape(height, width, bpp)
