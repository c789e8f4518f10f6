"""Integration tests for the test-web server subprocess (loopback only, a few seconds)."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scripts.testweb import PROJECT_ROOT, HostSpec, TestWeb, WebSpec

SLOW_MS = 300


def _spec() -> WebSpec:
    hosts = [
        HostSpec("a.test", ip_group="shared", pages=3),
        HostSpec("b.test", ip_group="shared", pages=3),
        HostSpec("slow.test", pages=2, latency_ms=SLOW_MS),
        HostSpec("v.test", pages=2, validators=True, robots=503),
    ]
    return WebSpec(hosts=hosts, base_ip="127.0.77.1")


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with TestWeb(_spec(), lifetime=120) as running:
        yield running


def _get(
    web: TestWeb, host: str, path: str = "/", ip: str | None = None, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(ip or web.hosts[host], web.port, timeout=10)
    try:
        sent = {"Host": f"{host}:{web.port}", "User-Agent": "testweb-test/1.0", **headers}
        conn.request("GET", path, headers=sent)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def _records(web: TestWeb, host: str, path: str) -> list[dict[str, object]]:
    # The log line is written right after the response is sent: allow a brief lag.
    deadline = time.monotonic() + 2
    while True:
        found = [r for r in web.requests() if r["host"] == host and r["path"] == path]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def test_startup_info(web: TestWeb) -> None:
    assert web.hosts["a.test"] == web.hosts["b.test"] == "127.0.77.1"
    assert web.hosts["slow.test"] == "127.0.77.2"
    assert web.seeds == [web.url(h) for h in ("a.test", "b.test", "slow.test", "v.test")]
    assert web.url("a.test", "/page/3") in web.pages
    assert not any("v.test" in p for p in web.pages)  # robots 503 = disallow all
    assert web.hosts_map_setting() == web.hosts


def test_answers_per_host_header(web: TestWeb) -> None:
    status_a, _, body_a = _get(web, "a.test", "/page/1")
    status_b, _, body_b = _get(web, "b.test", "/page/1")
    assert status_a == status_b == 200
    assert b"<title>a.test /page/1" in body_a and b"<title>b.test /page/1" in body_b
    assert _get(web, "a.test", "/", ip=web.hosts["slow.test"])[0] == 421  # wrong vhost IP
    assert _get(web, "nobody.test", "/", ip=web.hosts["a.test"])[0] == 404
    assert _get(web, "a.test", "/no/such/page")[0] == 404
    status, headers, body = _get(web, "a.test", "/robots.txt")
    assert (status, body) == (200, b"User-agent: *\nAllow: /\n")
    assert headers["Content-Type"].startswith("text/plain")
    status, headers, _ = _get(web, "v.test", "/robots.txt")
    assert (status, headers["Retry-After"]) == (503, "1")


def test_request_log_records(web: TestWeb) -> None:
    _get(web, "b.test", "/page/2?utm_source=x&utm_medium=y")
    (record,) = _records(web, "b.test", "/page/2?utm_source=x&utm_medium=y")
    assert record["server_ip"] == web.hosts["b.test"]
    assert record["status"] == 200 and record["ua"] == "testweb-test/1.0"
    assert str(record["client"]).startswith("127.")
    assert record["url"] == web.url("b.test", "/page/2?utm_source=x&utm_medium=y")
    assert isinstance(record["t_start"], float)
    assert record["t_start"] <= record["t_end"] <= time.time()


def test_latency_runs_concurrently(web: TestWeb) -> None:
    n = 8
    started = time.monotonic()
    with ThreadPoolExecutor(n) as pool:
        statuses = list(pool.map(lambda _: _get(web, "slow.test", "/page/2")[0], range(n)))
    elapsed = time.monotonic() - started
    assert statuses == [200] * n
    assert elapsed < n * SLOW_MS / 1000 / 2  # overlapping, not serialised
    records = _records(web, "slow.test", "/page/2")
    assert len(records) == n
    assert all(r["t_end"] - r["t_start"] >= SLOW_MS / 1000 * 0.9 for r in records)
    # All n were in flight at once: the last arrival precedes the first completion.
    assert max(r["t_start"] for r in records) < min(r["t_end"] for r in records)


def test_conditional_get(web: TestWeb) -> None:
    status, headers, _ = _get(web, "v.test", "/page/1")
    assert status == 200 and headers["Last-Modified"]
    assert _get(web, "v.test", "/page/1", **{"If-None-Match": headers["ETag"]})[0] == 304
    since = {"If-Modified-Since": headers["Last-Modified"]}
    assert _get(web, "v.test", "/page/1", **since)[0] == 304
    assert _get(web, "v.test", "/page/1", **{"If-None-Match": '"other"'})[0] == 200


def _listening_addresses(pid: int, port: int) -> set[str]:
    """Local addresses of the LISTEN sockets owned by ``pid`` (from /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:  # a connection closed while we were listing
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            addr, hex_port = cols[1].split(":")
            if cols[3] == "0A" and cols[9] in inodes and int(hex_port, 16) == port:
                found.add(socket.inet_ntoa(bytes.fromhex(addr)[::-1]) if table == "tcp" else addr)
    return found


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="needs Linux /proc")
def test_binds_only_spec_loopback_addresses(web: TestWeb) -> None:
    assert web.pid is not None
    assert _listening_addresses(web.pid, web.port) == set(web.hosts.values())
    with pytest.raises(ConnectionRefusedError):  # not a wildcard bind
        socket.create_connection(("127.0.0.1", web.port), timeout=2).close()


def test_stop_kills_own_process_quickly() -> None:
    web = TestWeb(WebSpec.shared_ip(2, 1), lifetime=60).start()
    pid = web.pid
    assert pid is not None and _get(web, "s000.test")[0] == 200
    started = time.monotonic()
    web.stop()  # closes stdin: --exit-on-stdin-eof ends the reactor
    assert time.monotonic() - started < 3
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert [r["status"] for r in web.requests()] == [200]  # log readable after stop


def test_cli_prints_json_line_and_honours_lifetime(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    cmd = [sys.executable, "-m", "scripts.testweb", "--spec", "demo", "--port", "0"]
    cmd += ["--log", str(log), "--lifetime", "1", "--base-ip", "127.0.78.1"]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        assert {"port", "hosts", "seeds", "pages"} <= set(info)
        assert info["hosts"]["alpha.test"] == "127.0.78.1" and len(info["hosts"]) == 8
        assert f"http://alpha.test:{info['port']}/page/1" in info["pages"]
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 8
        assert proc.stdout.read() == b""  # exactly one line on stdout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serves_the_trap_web() -> None:
    """Every trap family and non-page file over real HTTP, and the oracle beside it."""
    spec = WebSpec.traps()
    spec.base_ip = "127.0.79.1"
    with TestWeb(spec, lifetime=60) as web:
        assert 600 <= len(web.real_pages()) <= 1000
        answers = {
            ("store.test", "/shop/shoes/?size=m&color=red&ref=side2"): (200, "text/html"),
            ("news.test", "/page/2?s=0123abcd"): (200, "text/html"),
            ("mall.test", "/no/such/page"): (200, "text/html"),
            ("forum.test", "/no/such/page"): (302, "text/plain"),
            ("market.test", "/events?year=1999&month=12"): (200, "text/html"),
            ("docs.test", "/gallery/p1/p2/p3"): (200, "text/html"),
            ("wiki.test", "/filter/" + "-".join(["crawler"] * 150)): (200, "text/html"),
            ("docs.test", "/files/manual.pdf"): (200, "application/pdf"),
            ("wiki.test", "/_sources/page-4.txt"): (200, "text/plain"),
        }
        for (host, path), (status, content_type) in answers.items():
            got, headers, _ = _get(web, host, path)
            assert (got, headers["Content-Type"].split(";")[0]) == (status, content_type), path
            url = web.url(host, path)
            assert web.is_trap(url) != web.is_non_page(url), path
            assert url not in web.real_pages()
