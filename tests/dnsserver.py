"""A DNS server on a loopback port for tests, whose records a test changes while it runs.

``LocalDns`` runs ``python -m tests.dnsserver`` as a subprocess (twisted.names.server on
its own reactor, so the test process never starts one), serving a zone kept in a JSON
file it re-reads when the file changes, and logging every query it gets:

    with LocalDns({"a.test": {"A": ["127.0.60.1", "127.0.60.2"], "ttl": 2}}) as dns:
        settings = {"DNS_SERVERS": dns.server, "DNS_HOSTS_MAP_ONLY": False}
        ...
        dns.set("a.test", A=["127.0.60.3"], ttl=2)  # answered from the next query on
        asked = [q["t"] for q in dns.queries() if q["name"] == "a.test"]

An entry holds "A" and "AAAA" address lists, or a "CNAME" target, and a "ttl" (s,
default 60); "rcode": "servfail" / "refused" answers that error, "drop" never answers
(the client times out). A name not in the zone is NXDOMAIN; a name without records of
the asked type is NODATA. The server exits when its lifetime ends or its stdin closes
(the test process died), and stop() ends it by its PID.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from tempfile import TemporaryDirectory
from types import TracebackType
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
Zone = dict[str, dict[str, Any]]


class LocalDns:
    """Context manager owning one test DNS server subprocess."""

    def __init__(self, zone: Zone | None = None, lifetime: float = 300) -> None:
        self._tmp = TemporaryDirectory(prefix="testdns-")
        self.zone_path = Path(self._tmp.name) / "zone.json"
        self.log_path = Path(self._tmp.name) / "queries.jsonl"
        self.zone: Zone = dict(zone or {})
        self.lifetime = lifetime
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def server(self) -> str:
        """The DNS_SERVERS value naming this server."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> LocalDns:
        self._write()
        self.log_path.write_text("")
        cmd = [
            *(sys.executable, "-m", "tests.dnsserver", "--zone", str(self.zone_path)),
            *("--log", str(self.log_path), "--lifetime", str(self.lifetime)),
        ]
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=PROJECT_ROOT, env=env
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # {"port": n} once listening
        if not line:
            self.stop()
            raise RuntimeError("the test DNS server exited before listening")
        self.port = int(json.loads(line)["port"])
        return self

    def set(self, name: str, **entry: Any) -> None:
        """Replace one name's entry (no entry arguments: remove the name, NXDOMAIN)."""
        if entry:
            self.zone[name] = entry
        else:
            self.zone.pop(name, None)
        self._write()

    def _write(self) -> None:
        # Replaced whole (rename), so the server never reads half a file.
        tmp = self.zone_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.zone))
        os.replace(tmp, self.zone_path)

    def queries(self, name: str | None = None) -> list[dict[str, Any]]:
        """Queries received so far: {"t", "name", "type"}, optionally for one name."""
        rows = [json.loads(line) for line in self.log_path.read_text().splitlines() if line]
        return [r for r in rows if name is None or r["name"] == name]

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> LocalDns:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@pytest.fixture
def local_dns() -> Iterator[LocalDns]:
    """An empty zone on a loopback port; the test fills it with set()."""
    with LocalDns() as server:
        yield server


# --- the server process ------------------------------------------------------------------


def serve(zone_path: Path, log_path: Path, lifetime: float) -> None:
    from twisted.internet import reactor
    from twisted.names import dns

    factory = _factory(zone_path, log_path)
    port = reactor.listenUDP(0, dns.DNSDatagramProtocol(controller=factory), "127.0.0.1")  # type: ignore[attr-defined]
    print(json.dumps({"port": port.getHost().port}), flush=True)
    reactor.callLater(lifetime, reactor.stop)  # type: ignore[attr-defined]

    def until_stdin_closes() -> None:
        sys.stdin.buffer.read()
        reactor.callFromThread(reactor.stop)  # type: ignore[attr-defined]

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    reactor.run()  # type: ignore[attr-defined]


def _factory(zone_path: Path, log_path: Path) -> Any:
    from twisted.names import server

    class Answered(Exception):
        """An error answer the zone asks for (its rcode), sent without logging it."""

        def __init__(self, rcode: int) -> None:
            super().__init__(rcode)
            self.rcode = rcode

    class Factory(server.DNSServerFactory):
        def gotResolverError(self, failure: Any, protocol: Any, message: Any, address: Any) -> None:
            if not failure.check(Answered):
                super().gotResolverError(failure, protocol, message, address)
                return
            response = self._responseFromMessage(message=message, rCode=failure.value.rcode)
            self.sendReply(protocol, response, address)

    return Factory(authorities=[_zone_resolver(zone_path, log_path, Answered)], verbose=0)


def _zone_resolver(zone_path: Path, log_path: Path, answered: Any) -> Any:
    from twisted.internet import defer
    from twisted.names import common, dns, error

    class ZoneResolver(common.ResolverBase):
        def __init__(self) -> None:
            super().__init__()
            self.stamp: tuple[int, int] = (0, 0)
            self.zone: Zone = {}
            self.log = log_path.open("a")

        def _lookup(self, name: bytes, cls: int, type: int, timeout: Any) -> Any:
            host = name.decode().lower()
            kind = dns.QUERY_TYPES.get(type, str(type))
            self.log.write(json.dumps({"t": time.time(), "name": host, "type": kind}) + "\n")
            self.log.flush()
            entry = self._current().get(host)
            if entry is None:
                return defer.fail(error.DomainError(name))
            rcode = entry.get("rcode")
            if rcode == "drop":
                return defer.Deferred()  # never fires: no answer at all
            if rcode in ("servfail", "refused"):
                return defer.fail(answered(dns.EREFUSED if rcode == "refused" else dns.ESERVER))
            return defer.succeed((_records(name, type, entry), [], []))

        def _current(self) -> Zone:
            stat = zone_path.stat()
            if (stat.st_ino, stat.st_mtime_ns) != self.stamp:
                self.stamp, self.zone = (
                    (stat.st_ino, stat.st_mtime_ns),
                    json.loads(zone_path.read_text()),
                )
            return self.zone

    return ZoneResolver()


def _records(name: bytes, qtype: int, entry: dict[str, Any]) -> list[Any]:
    from twisted.names import dns

    ttl = int(entry.get("ttl", 60))
    if "CNAME" in entry:
        target = dns.Record_CNAME(entry["CNAME"].encode(), ttl)
        return [dns.RRHeader(name, dns.CNAME, dns.IN, ttl, target, auth=True)]
    if qtype == dns.A:
        made = [dns.Record_A(ip, ttl) for ip in entry.get("A", [])]
    elif qtype == dns.AAAA:
        made = [dns.Record_AAAA(ip, ttl) for ip in entry.get("AAAA", [])]
    else:
        made = []
    return [dns.RRHeader(name, qtype, dns.IN, ttl, record, auth=True) for record in made]


def main() -> None:
    parser = argparse.ArgumentParser(description="a test DNS server on 127.0.0.1")
    parser.add_argument("--zone", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--lifetime", type=float, default=300)
    args = parser.parse_args()
    serve(args.zone, args.log, args.lifetime)


if __name__ == "__main__":
    main()
