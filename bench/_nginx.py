"""Folders served by a real nginx on loopback, for benchmarks that crawl real manuals.

Python's http.server answers every request the same way; nginx is what a documentation
site runs behind: weak ETags once it gzips, directory redirects, its own 404 page. The
server runs in the foreground of a process this module starts and stops (SIGQUIT), from
a config and prefix in a temporary folder, so no system nginx setting or service is used.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT = 10.0  # s for every address to accept connections


def have_nginx() -> bool:
    return shutil.which("nginx") is not None


def _config(sites: dict[str, tuple[str, str]], port: int, prefix: Path) -> str:
    servers = "\n".join(
        f"  server {{ listen {address}:{port}; server_name {host}; root {folder};"
        f" index index.html; access_log {prefix}/access-{host}.log; }}"
        for host, (folder, address) in sites.items()
    )
    temps = " ".join(
        f"{kind}_temp_path {prefix}/{kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"daemon off; master_process on; worker_processes 1; pid {prefix}/nginx.pid;\n"
        f"error_log {prefix}/error.log;\nevents {{ worker_connections 256; }}\n"
        "http { include /etc/nginx/mime.types; default_type application/octet-stream;\n"
        f"  sendfile on; gzip on; {temps}\n{servers}\n}}\n"
    )


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


@contextmanager
def nginx_sites(sites: dict[str, tuple[str, str]], prefix: Path) -> Iterator[dict[str, int]]:
    """host -> port of nginx serving each (folder, loopback address) in `sites`."""
    prefix.mkdir(parents=True, exist_ok=True)
    port = _free_port(next(iter(sites.values()))[1])
    (prefix / "nginx.conf").write_text(_config(sites, port, prefix))
    proc = subprocess.Popen(["nginx", "-c", str(prefix / "nginx.conf"), "-p", str(prefix)])
    try:
        _wait_listening([address for _, address in sites.values()], port, proc)
        yield dict.fromkeys(sites, port)
    finally:
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(START_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_listening(addresses: list[str], port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    pending = list(addresses)
    while pending:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with {proc.returncode}: see its error.log")
        try:
            socket.create_connection((pending[0], port), timeout=0.5).close()
            pending.pop(0)
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not listen on {pending[0]}:{port}") from None
            time.sleep(0.05)
