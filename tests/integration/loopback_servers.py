"""Plain and TLS HTTP servers on several 127.x addresses and one port, each logging
what it was asked: the address it answered on, the Host header and the TLS SNI name.

Two addresses on one port are what one host name with two A records looks like: only
the address a client connects to tells the servers apart, never the URL.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ROBOTS = b"User-agent: *\nAllow: /\n"


def page(path: str, links: int) -> bytes | None:
    """With `links`, "/" links to /p/0 .. /p/<links - 1> and any other path is a 404 (no
    soft-404s for the crawl's probe); without, every path is a page. Each page differs, so
    none is a duplicate of another."""
    leaves = {f"/p/{n}" for n in range(links)}
    if links and path != "/" and path not in leaves:
        return None
    anchors = "".join(f'<a href="/p/{n}">{n}</a>' for n in range(links)) if path == "/" else ""
    return f"<html><body><p>page {path}</p>{anchors}</body></html>".encode()


def self_signed(host: str, folder: Path) -> tuple[Path, Path]:
    """(certificate, key) files of a self-signed certificate for `host`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / f"{host}.crt", folder / f"{host}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class Servers:
    """One server per address, all on `port`; `log` has one record per request."""

    def __init__(
        self, addresses: list[str], tls: tuple[Path, Path] | None = None, links: int = 0
    ) -> None:
        self.addresses = addresses
        self.tls = tls
        self.links = links
        self.log: list[dict[str, Any]] = []
        self.port = 0
        self._servers: list[ThreadingHTTPServer] = []
        self._silent: set[str] = set()  # addresses that take requests and never answer
        self._stopped = threading.Event()  # wakes the silent handlers at stop()
        self._holes: list[socket.socket] = []  # connections filling black holes' queues

    def _handler(self, address: str) -> type[BaseHTTPRequestHandler]:
        servers = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if address in servers._silent:
                    servers._stopped.wait(600)  # read, never answered: the client times out
                    return
                start = time.time()
                robots = self.path == "/robots.txt"
                found = ROBOTS if robots else page(self.path, servers.links)
                body = b"not found" if found is None else found
                kind = "text/plain" if robots else "text/html"
                self.send_response(404 if found is None else 200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                sni = getattr(self.connection, "sni", None)
                record = {"server_ip": address, "host": self.headers.get("Host"), "sni": sni}
                servers.log.append({**record, "path": self.path, "t_start": start})
                servers.log[-1]["t_end"] = time.time()

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def _context(self) -> ssl.SSLContext | None:
        if self.tls is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*self.tls)

        def remember(sock: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> None:
            sock.sni = name  # type: ignore[attr-defined]  # read by the handler

        context.sni_callback = remember
        return context

    def start(self, attempts: int = 20) -> Servers:
        context = self._context()
        for _ in range(attempts):
            try:
                for address in self.addresses:
                    server = ThreadingHTTPServer((address, self.port), self._handler(address))
                    self.port = server.server_address[1]
                    self._servers.append(server)
                break
            except OSError:  # the first address's free port is taken on another one
                for bound in self._servers:
                    bound.server_close()
                self._servers, self.port = [], 0
        else:
            raise RuntimeError("no port free on every address")
        for server in self._servers:
            if context is not None:
                server.socket = context.wrap_socket(server.socket, server_side=True)
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        servers, self._servers = self._servers, []
        for server in servers:
            server.shutdown()
            server.server_close()
        for sock in self._holes:
            sock.close()

    def stop_one(self, address: str) -> None:
        """Close one address's server: connections to it are refused from now on."""
        server = self._servers[self.addresses.index(address)]
        server.shutdown()
        server.server_close()

    def silence(self, address: str) -> None:
        """One address keeps accepting connections and reading requests, and answers none
        (a hung server): its clients wait out their download timeout."""
        self._silent.add(address)

    def black_hole(self, address: str) -> None:
        """One address stops completing TCP handshakes (a firewalled or powered-off
        host): its server accepts no more, its listening socket stays open (never a
        refusal) and its accept queue is filled, so the kernel drops every later SYN and
        a client's connect waits out its timeout (no RST comes back)."""
        server = self._servers[self.addresses.index(address)]
        server.shutdown()  # serve_forever ends; the socket still listens until stop()
        for _ in range(server.request_queue_size + 3):  # past the backlog: the queue is full
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex((address, self.port))
            self._holes.append(filler)

    def on(self, address: str) -> list[dict[str, Any]]:
        return [r for r in self.log if r["server_ip"] == address]


@contextmanager
def serving(
    addresses: list[str], tls: tuple[Path, Path] | None = None, links: int = 0
) -> Iterator[Servers]:
    servers = Servers(addresses, tls, links).start()
    try:
        yield servers
    finally:
        servers.stop()
