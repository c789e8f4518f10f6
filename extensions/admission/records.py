"""Compact request records: what the frontier stores per queued URL.

Not pickled Request objects: a JSON object with short keys that omits every
default, so a plain link costs its URL plus a few bytes. Transient meta (the
download slot, the lease, latency) is never stored: it belongs to one attempt.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import Request

from extensions.admission.prioritizer import SCORE_META

if TYPE_CHECKING:
    from scrapy import Spider

# Meta keys that describe one attempt, not the request: recomputed on every lease.
TRANSIENT_META = frozenset(
    {
        "download_slot",
        "download_latency",
        "frontier_lease",
        "frontier_ip",
        "depth",
        "_scheme_proxy",
        # The prioritizer's inputs and the page's outcome (prioritizer.py, trap feedback).
        "frontier_source",
        "frontier_parent",
        "frontier_score",
        "frontier_probe",
        "frontier_outcome",
        "frontier_status",
    }
)
# Headers Scrapy's own middlewares add again when the request is re-created.
_DERIVED_HEADERS = frozenset({b"Referer", b"Accept", b"Accept-Language", b"User-Agent"})
# json.dumps with arguments builds a new encoder per call: one, built once, writes the
# same text at a fraction of the cost (a record per admitted URL).
_RECORD_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_json_string = json.encoder.encode_basestring  # what _RECORD_JSON writes for a str


class RecordError(ValueError):
    """The request cannot be stored (a callback that is not a spider method, odd meta)."""


def _method_name(spider: Spider, func: Any) -> str | None:
    if func is None:
        return None
    name = getattr(func, "__name__", None)
    if name and getattr(spider, name, None) == func:
        return name
    raise RecordError(f"callback {func!r} is not a method of spider {spider.name!r}")


def encode_request(
    request: Request,
    spider: Spider,
    *,
    keep_referer: bool = False,
    url: str | None = None,
    score: float | None = None,
) -> str:
    """The record for `request`: {"u": url, "d": depth, ...}, defaults omitted; `url`
    replaces request.url (the canonical form) without building a new Request; `score`
    (the prioritizer's, whole points: ~7 bytes) is what its outlinks inherit."""
    # "t": when it entered the frontier (whole seconds): operators see the oldest age.
    record: dict[str, Any] = {"u": url or request.url, "t": int(time.time())}
    if score is not None:
        record["s"] = round(score)
    depth = request.meta.get("depth", 0)
    if depth:
        record["d"] = depth
    callback = _method_name(spider, request.callback)
    if callback and callback != "parse":
        record["cb"] = callback
    errback = _method_name(spider, request.errback)
    if errback:
        record["eb"] = errback
    if request.priority:
        record["p"] = request.priority
    if request.dont_filter:
        record["df"] = 1
    if request.method != "GET":
        record["m"] = request.method
    if request.body:
        record["b"] = base64.b64encode(request.body).decode("ascii")
    headers = _stored_headers(request, keep_referer)
    if headers:
        record["h"] = headers
    meta = {k: v for k, v in request.meta.items() if k not in TRANSIENT_META}
    if meta:
        record["meta"] = meta
    if request.cb_kwargs:
        record["kw"] = request.cb_kwargs
    try:
        return "{" + ",".join([f'"{key}":{_json(value)}' for key, value in record.items()]) + "}"
    except (TypeError, ValueError) as exc:
        raise RecordError(f"request {request.url} has meta that is not JSON: {exc}") from None


def _json(value: Any) -> str:
    """The JSON of one record value, as json.dumps writes it: the plain str and int
    of almost every field skip the encoder (a record per admitted URL)."""
    kind = type(value)
    if kind is str:
        return _json_string(value)
    if kind is int:
        return str(value)
    return _RECORD_JSON.encode(value)


def _stored_headers(request: Request, keep_referer: bool) -> dict[str, list[str]]:
    headers: dict[str, list[str]] = {}
    for name, values in request.headers.items():
        if name in _DERIVED_HEADERS and not (keep_referer and name == b"Referer"):
            continue
        headers[name.decode("latin-1")] = [v.decode("latin-1") for v in values]
    return headers


# Re-crawl records carry this prefix in Redis: the Lua scripts route them to the IP's
# re-crawl back queue (RECRAWL_SHARE) without parsing JSON.
RECRAWL_MARK = "R|"
# The admit script marks a closed URL pattern's probe (the one URL in
# PRIORITY_TRAP_PROBE_EVERY it still lets through): dispatch must not drop it.
PROBE_MARK = "P|"
PROBE_META = "frontier_probe"  # a decoded probe's meta flag


def mark_recrawl(record: str, recrawl: bool) -> str:
    return RECRAWL_MARK + record if recrawl else record


def decode_request(raw: str | bytes, spider: Spider) -> Request:
    """Rebuild the Request a record was made from (its transient meta is not in it)."""
    text = record_text(raw)
    record = json.loads(text.removeprefix(PROBE_MARK))
    meta = dict(record.get("meta") or {})
    meta["depth"] = record.get("d", 0)
    if "s" in record:
        meta[SCORE_META] = record["s"]
    if text.startswith(PROBE_MARK):
        meta[PROBE_META] = True
    errback = record.get("eb")
    return Request(
        record["u"],
        callback=getattr(spider, record.get("cb", "parse")),
        errback=getattr(spider, errback) if errback else None,
        method=record.get("m", "GET"),
        body=base64.b64decode(record["b"]) if "b" in record else None,
        headers=record.get("h"),
        priority=record.get("p", 0),
        dont_filter=bool(record.get("df")),
        meta=meta,
        cb_kwargs=record.get("kw"),
    )


def record_text(raw: str | bytes) -> str:
    """A queued record as JSON text (with a probe mark, if any): the re-crawl mark cut."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    return text.removeprefix(RECRAWL_MARK)


def front_entry_record(entry: str) -> str:
    """The record of a front-queue entry, "ip|lane|record" (before lanes: "ip|record")."""
    rest = entry.split("|", 1)[1]
    lane, sep, record = rest.partition("|")
    return record if sep and lane.isdigit() else rest


# No URL pattern (dont_filter requests, operator tools): no trap feedback, no caps.
NO_PATTERNS = ("", "", "", "", "")


@dataclass(frozen=True)
class AdmitItem:
    """One request to admit: seen_key '' skips URL-seen and budgets (dont_filter),
    ip '' parks it until its host resolves; priority -1 = the bucket of the score (with
    the host's importance and its pattern's feedback, in the admit script); patterns:
    fine, coarse, host-wide, path key, facet key, and family: its siblings' pattern
    (admission/patterns.py); referrer: the URL-seen key of (referring host, host), ''
    for a same-host link."""

    seen_key: str
    ip: str
    host: str
    priority: int
    record: str
    patterns: tuple[str, str, str, str, str] = NO_PATTERNS
    score: float = 0.0
    referrer: str = ""
    sitemap: bool = False
    family: str = ""

    def lua(self) -> list[Any]:
        return [
            self.seen_key,
            self.ip,
            self.host,
            self.priority,
            self.record,
            *self.patterns,
            round(self.score, 1),
            self.referrer,
            int(self.sitemap),
            self.family,
        ]
