"""Real S3 for tests: moto's standalone server on loopback, and a TCP forwarder
in front of it that a test can cut to make S3 unreachable.

The moto server is our own subprocess: bound to 127.0.0.1, started with
PR_SET_PDEATHSIG (it dies with the test process, however that dies) and
stopped by PID. Nothing here is mocked: boto3 talks HTTP to the server.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

MOTO_SERVER = Path(sys.executable).with_name("moto_server")
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
REGION = "us-east-1"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class MotoServer:
    """moto_server on 127.0.0.1:<free port>."""

    log_path: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> MotoServer:
        self.port = free_port()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto_server exited: {self.log_path.read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("moto_server did not listen in time")

    def pause(self) -> None:
        """SIGSTOP: the server keeps its sockets and objects but answers nothing."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGCONT)  # a paused server cannot handle SIGTERM
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def client(self, endpoint: str | None = None) -> Any:
        return boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint or self.endpoint,
            region_name=REGION,
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            config=Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=10),
        )

    def settings(self, uri: str, endpoint: str | None = None) -> dict[str, Any]:
        """Crawl settings for a page store at uri on this server (or via endpoint)."""
        return {
            "PAGESTORE_URI": uri,
            "AWS_ENDPOINT_URL": endpoint or self.endpoint,
            "AWS_REGION_NAME": REGION,
            **CREDENTIALS,
        }

    def keys(self, bucket: str, prefix: str = "") -> set[str]:
        client = self.client()
        paginator = client.get_paginator("list_objects_v2")
        found: set[str] = set()
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            found.update(obj["Key"] for obj in page.get("Contents", []))
        return found


@dataclass
class TcpForwarder:
    """127.0.0.1:<port> -> upstream; close() refuses new connections and cuts the
    open ones, which to a client looks like the server process going away."""

    upstream: tuple[str, int]
    port: int = 0
    _listener: socket.socket | None = None
    _sockets: list[socket.socket] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> TcpForwarder:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        if self._listener is not None:
            # shutdown wakes the thread blocked in accept(); close alone may not.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
