"""One fetch as WARC records: the HTTP exchange as received, or a revisit of an earlier one.

The response record holds the HTTP message as the crawl received it: status line,
headers and payload. The payload is the body Scrapy hands the spider: transfer
decoding (chunked) and content decoding (gzip, deflate, br, zstd: Scrapy's
HttpCompressionMiddleware deletes Content-Encoding once it decoded the body) undone.
So the headers written say what the payload is: Transfer-Encoding is dropped and
Content-Length is the payload's length (the server's values kept as
X-Crawlproj-Orig-Transfer-Encoding / X-Crawlproj-Orig-Content-Length), which is what
warcio and pywb expect of a record whose payload is not encoded. A Content-Encoding
Scrapy could not decode stays: the payload is then still encoded that way.

Revisits (WARC 1.1, 6.7) carry the HTTP headers only:
    identical-payload-digest  an exact duplicate, or a re-crawl's unchanged 200, whose
                              payload digest equals the stored original's
    server-not-modified       a 304 to a conditional GET
    NEAR_DUPLICATE_PROFILE    a near duplicate (README "WARC output"): names its original
                              (WARC-Refers-To*) and the simhash distance and resemblance
                              (Crawlproj-Simhash-Distance, Crawlproj-Resemblance)

Every response and revisit also carries Crawlproj-Content-Key, the page store's key of
its payload (extensions/pagestore/protocol.py: the payload's sha256), beside warcio's
sha1 WARC-Block-Digest / WARC-Payload-Digest.
"""

from __future__ import annotations

import base64
import hashlib
import http
from dataclasses import dataclass
from datetime import UTC, datetime
from io import BytesIO
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders

from extensions.pagestore.protocol import content_key

if TYPE_CHECKING:
    from scrapy.http import Request, Response
    from warcio.recordloader import ArcWarcRecord

IDENTICAL_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
NEAR_DUPLICATE_PROFILE = (
    "https://github.com/crawlproj/crawlproj/blob/main/README.md#near-duplicate-revisits"
)
# Response headers that describe the bytes on the wire, not the payload written.
_WIRE_HEADERS = (b"Transfer-Encoding",)
# Scrapy response flags of a body that ended early (WARC-Truncated reasons, WARC 1.1 5.13).
# DOWNLOAD_MAXSIZE never cuts a body in Scrapy 2.19: the download is cancelled and no
# response (no row, no record) exists. What reaches the spider cut short is a body
# ContentTypeFilter stopped at the headers, or one a lost connection ended.
_TRUNCATED_FLAGS = {
    "download_stopped": "unspecified",  # a type not in CONTENT_TYPES_WANTED: cut by policy
    "partial": "disconnect",
    "dataloss": "disconnect",
}


def sha1_digest(data: bytes) -> str:
    """A WARC digest value: sha1, base32 (what warcio writes and `warcio check` verifies)."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def warc_date(fetched_at: str) -> str:
    """A row's fetched_at (ISO 8601 with offset) as a WARC-Date: UTC, milliseconds, Z.
    The row and its record carry the same instant, which joins them (index.py)."""
    moment = datetime.fromisoformat(fetched_at).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class Original:
    """The stored full record a revisit refers to (what the pipeline remembers per URL)."""

    url: str  # its WARC-Target-URI
    date: str
    record_id: str
    payload_digest: str

    def encode(self) -> str:
        return f"{self.date} {self.record_id} {self.payload_digest} {self.url}"

    @classmethod
    def decode(cls, value: str) -> Original | None:
        parts = value.split(" ", 3)
        if len(parts) != 4:
            return None
        date, record_id, digest, url = parts
        return cls(url, date, record_id, digest)


@dataclass(frozen=True)
class Revisit:
    """What a revisit record says: its profile, what it refers to, and why."""

    profile: str
    refers_to: str  # WARC-Refers-To-Target-URI
    original: Original | None  # None: not known to this crawl (no date, no record id)
    distance: int | None = None  # near duplicates: simhash bits to the original
    resemblance: float | None = None


@dataclass(frozen=True)
class Exchange:
    """One fetch, as the WARC records need it."""

    url: str
    date: str  # WARC-Date
    ip: str | None
    request: StatusAndHeaders
    request_body: bytes
    response: StatusAndHeaders
    body: bytes
    content_type: str | None
    truncated: str | None

    @property
    def payload_digest(self) -> str:
        return sha1_digest(self.body)


def request_message(request: Request) -> tuple[StatusAndHeaders, bytes]:
    """The request line and headers Scrapy sent (Host first, as HTTP/1.1 sends it)."""
    parts = urlsplit(request.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = [("Host", parts.netloc)]
    headers += _pairs(request.headers, skip=(b"Host",))
    line = f"{request.method} {target} HTTP/1.1"
    return StatusAndHeaders(line, headers, is_http_request=True), request.body or b""


def response_message(response: Response) -> StatusAndHeaders:
    """Status line and headers, rewritten to describe the decoded payload."""
    reason = _reason(response.status)
    headers: list[tuple[str, str]] = []
    for name in _WIRE_HEADERS:
        for value in response.headers.getlist(name):
            headers.append(("X-Crawlproj-Orig-" + name.decode(), value.decode("latin-1")))
    length = response.headers.get(b"Content-Length")
    if length is not None and length.strip() != str(len(response.body)).encode():
        headers.append(("X-Crawlproj-Orig-Content-Length", length.decode("latin-1")))
    headers = _pairs(response.headers, skip=(*_WIRE_HEADERS, b"Content-Length")) + headers
    if response.status != 304 or response.body:
        headers.append(("Content-Length", str(len(response.body))))
    protocol = response.protocol or "HTTP/1.1"
    return StatusAndHeaders(f"{response.status} {reason}", headers, protocol=protocol)


def truncation(response: Response) -> str | None:
    for flag in response.flags:
        if flag in _TRUNCATED_FLAGS:
            return _TRUNCATED_FLAGS[flag]
    return None


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _pairs(headers: Any, skip: tuple[bytes, ...]) -> list[tuple[str, str]]:
    lowered = {name.lower() for name in skip}
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in headers.items()
        if name.lower() not in lowered
        for value in values
    ]


def _common(exchange: Exchange, kind: str) -> dict[str, str]:
    fields = {"WARC-Type": kind, "WARC-Date": exchange.date}  # the type first, for readers
    if exchange.ip:
        fields["WARC-IP-Address"] = exchange.ip
    return fields


def response_record(builder: RecordBuilder, exchange: Exchange) -> ArcWarcRecord:
    fields = _common(exchange, "response")
    fields["Crawlproj-Content-Key"] = content_key(exchange.body, exchange.content_type)
    if exchange.truncated:
        fields["WARC-Truncated"] = exchange.truncated
    return builder.create_warc_record(
        exchange.url,
        "response",
        payload=BytesIO(exchange.body),
        length=len(exchange.body),
        warc_headers_dict=fields,
        http_headers=exchange.response,
    )


def revisit_record(builder: RecordBuilder, exchange: Exchange, revisit: Revisit) -> ArcWarcRecord:
    fields = _common(exchange, "revisit")
    fields["WARC-Profile"] = revisit.profile
    fields["WARC-Refers-To-Target-URI"] = revisit.refers_to
    original = revisit.original
    if original is not None:
        fields["WARC-Refers-To-Date"] = original.date
        fields["WARC-Refers-To"] = original.record_id
    if revisit.profile == NOT_MODIFIED_PROFILE:
        # The payload not sent is the stored copy's (when this crawl knows it).
        digest = original.payload_digest if original is not None else None
    else:
        digest = exchange.payload_digest
        fields["Crawlproj-Content-Key"] = content_key(exchange.body, exchange.content_type)
    if digest:
        fields["WARC-Payload-Digest"] = digest
    if revisit.distance is not None:
        fields["Crawlproj-Simhash-Distance"] = str(revisit.distance)
    if revisit.resemblance is not None:
        fields["Crawlproj-Resemblance"] = f"{revisit.resemblance:.3f}"
    return builder.create_warc_record(
        exchange.url, "revisit", warc_headers_dict=fields, http_headers=exchange.response
    )


def request_record(builder: RecordBuilder, exchange: Exchange, concurrent_to: str) -> ArcWarcRecord:
    fields = _common(exchange, "request")
    fields["WARC-Concurrent-To"] = concurrent_to
    return builder.create_warc_record(
        exchange.url,
        "request",
        payload=BytesIO(exchange.request_body),
        length=len(exchange.request_body),
        warc_headers_dict=fields,
        http_headers=exchange.request,
    )


def exchange_records(
    builder: RecordBuilder, exchange: Exchange, revisit: Revisit | None
) -> list[ArcWarcRecord]:
    """[response or revisit, request]: the request names the response it belongs to."""
    if revisit is None:
        main = response_record(builder, exchange)
    else:
        main = revisit_record(builder, exchange, revisit)
    record_id = main.rec_headers.get_header("WARC-Record-ID")
    return [main, request_record(builder, exchange, record_id)]
