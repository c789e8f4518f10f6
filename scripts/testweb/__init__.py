"""Local multi-host test web for integration tests, the demo and benchmarks.

``TestWeb`` runs ``python -m scripts.testweb`` as a subprocess (its own reactor, so the
importing process never starts one) and exposes what the crawler needs: the hostname
-> 127.x map, seeds, the expected page set and the server-side request log.

    with TestWeb(WebSpec.demo()) as web:
        settings = {"DNS_HOSTS_MAP": web.hosts_map_setting()}
        ... crawl web.seeds ...
        fetched = {r["url"] for r in web.requests() if r["status"] == 200}
        assert set(web.pages) <= fetched

For the trap webs (WebSpec.traps(), WebSpec.large_site()) the oracle is the generated
site itself: ``web.real_pages()``, ``web.is_trap(url)``, ``web.is_non_page(url)``.
"""

from __future__ import annotations

import functools
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from .sites import Site
from .spec import HostSpec, WebSpec, assign_ips

__all__ = ["HostSpec", "TestWeb", "WebSpec", "assign_ips"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class TestWeb:
    """Context manager owning one test-web server subprocess."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(
        self,
        spec: WebSpec | None = None,
        log_path: str | Path | None = None,
        lifetime: float = 600,
        port: int = 0,
        start_timeout: float = 30.0,
    ) -> None:
        self.spec = spec if spec is not None else WebSpec.demo()
        self.lifetime = lifetime
        self.requested_port = port
        self.start_timeout = start_timeout
        # Kept alive with the object (not removed on stop) so requests() still works
        # after the server is gone; cleaned when the TestWeb is garbage collected.
        self._tmp = tempfile.TemporaryDirectory(prefix="testweb-")
        self.log_path = Path(log_path) if log_path else Path(self._tmp.name) / "requests.jsonl"
        self.proc: subprocess.Popen[bytes] | None = None
        self.info: dict[str, Any] = {}
        self.port = 0
        self.hosts: dict[str, str] = {}
        self.seeds: list[str] = []
        self.pages: list[str] = []
        self.traps: list[str] = []

    # ---- lifecycle ---------------------------------------------------------------
    def start(self) -> TestWeb:
        if self.proc is not None:
            raise RuntimeError("TestWeb already started")
        spec_file = Path(self._tmp.name) / "spec.json"
        if not self.spec.epoch:
            self.spec.epoch = time.time()  # the changing pages' time 0, known to callers
        spec_file.write_text(self.spec.to_json(), encoding="utf-8")
        stderr_path = Path(self._tmp.name) / "stderr.txt"
        self.log_path.write_text("")  # the server appends; start each run from empty
        cmd = [
            *(sys.executable, "-m", "scripts.testweb", "--spec", str(spec_file)),
            *("--port", str(self.requested_port), "--log", str(self.log_path)),
            *("--lifetime", str(self.lifetime), "--exit-on-stdin-eof"),
        ]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p
        )
        with open(stderr_path, "wb") as stderr:
            # stdin is a pipe we never write: if this process dies, EOF stops the server.
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
            )
        try:
            line = self._read_line(self.start_timeout)
        except Exception:
            self.stop()
            raise RuntimeError(f"testweb failed to start: {stderr_path.read_text()}") from None
        self._load_info(json.loads(line))
        return self

    def _read_line(self, timeout: float) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in buf:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(remaining):
                    raise TimeoutError("no JSON line from testweb server")
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise EOFError("testweb server exited before listening")
                buf += chunk
        return buf.split(b"\n", 1)[0]

    def _load_info(self, info: dict[str, Any]) -> None:
        self.info = info
        self.port = int(info["port"])
        self.hosts = dict(info["hosts"])
        self.seeds = list(info["seeds"])
        self.pages = list(info["pages"])
        self.traps = list(info.get("traps", []))

    def stop(self) -> None:
        """Stop our own subprocess (by its PID via Popen): EOF first, then signals."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for closer in (proc.stdin, proc.stdout):
            if closer is not None:
                closer.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def __enter__(self) -> TestWeb:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ---- queries -----------------------------------------------------------------
    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def hosts_map_setting(self) -> dict[str, str]:
        """Value for the crawler's DNS_HOSTS_MAP setting (hostname -> 127.x address; a
        subdomain_trap host's "*.<host>" too)."""
        wild = {f"*.{h.name}": self.hosts[h.name] for h in self.spec.hosts if h.subdomain_trap}
        return {**self.hosts, **wild}

    @functools.cached_property
    def site(self) -> Site:
        """The generated web as served (pure: same spec and port, same answers)."""
        if not self.port:
            raise RuntimeError("start the TestWeb first: every URL carries its port")
        return Site(self.spec, self.port)

    def real_pages(self) -> list[str]:
        """Real HTML pages a budget-wise crawler should fetch (Site.real_pages)."""
        return self.site.real_pages()

    def is_trap(self, url: str) -> bool:
        return self.site.is_trap(url)

    def is_non_page(self, url: str) -> bool:
        return self.site.is_non_page(url)

    def requests(self) -> list[dict[str, Any]]:
        """Parsed request-log records so far (a half-written last line is skipped)."""
        if not self.log_path.exists():
            return []
        records = []
        for line in self.log_path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return records
