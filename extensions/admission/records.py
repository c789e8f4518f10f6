"""Compact request records: what the frontier stores per queued URL.

Not pickled Request objects and not JSON: a short text header and the URL, so a plain
link costs its URL (scheme cut) plus ~12 bytes (a queued URL's record is most of the
frontier's Redis memory: issue 15 counts every byte); queued, it also loses its URL's
authority when that is its IP's home (frontier/lua/authority.lua). The header carries
what almost every record has, and a JSON object carries the rare rest (callback, method,
body, headers, meta, cb_kwargs):

    ~<t>,<s>,<d>,<u>,<x>|<x bytes of JSON><URL without its scheme prefix>

t: when it entered the frontier (base-36 epoch seconds: operators see the oldest age),
s: the prioritizer's score (whole points; what its outlinks inherit; empty: none), d: depth
(empty: 0), u: the URL's scheme ("": https://, "h": http://, "-": the URL is whole), x: the
JSON's length (empty: none). Trailing empty fields are cut. A record queued before this
format is a JSON object ({"u": ..., "t": ...}) and is still read.
Transient meta (the download slot, the lease, latency) is never stored: it belongs to
one attempt.
"""

from __future__ import annotations

import base64
import json
import time
from typing import TYPE_CHECKING, Any, NamedTuple

from scrapy import Request

from extensions.admission.prioritizer import SCORE_META

if TYPE_CHECKING:
    from scrapy import Spider

# Meta keys that describe one attempt, not the request: recomputed on every lease.
# The canonical URL of a record fetched under another spelling (a session token kept in
# its path, or a redirect's): the document's identity for trap feedback and its row. Not
# transient: the record carries it to the lease.
CANONICAL_META = "frontier_canonical"

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
        # Names the front queue at admission (seeds, re-crawls); spent once queued.
        "frontier_priority",
        # A link whose admission settles its page's verdict: the page's lease (SETTLES_META).
        "frontier_settles",
        # A facet sidebar's link: counted against its path's facet cap (facet_sidebar.py).
        "frontier_facet",
        # A URL charged to its host's catch-all pattern (CATCH_MARK), while it is queued.
        "frontier_catch_all",
        # A filter counted against its facet cap (FACET_MARK), while it is queued.
        "frontier_facet_capped",
        # Leased from an IP that is down (DOWN_MARK): a re-routed page is not down.
        "frontier_ip_down",
    }
)
# A link's meta: the lease of the page whose verdict its admission settles (AdmitItem
# .settles; transient, above). The admit reply names those leases (settled_acks.py).
SETTLES_META = "frontier_settles"
# Headers Scrapy's own middlewares add again when the request is re-created.
_DERIVED_HEADERS = frozenset({b"Referer", b"Accept", b"Accept-Language", b"User-Agent"})
# json.dumps with arguments builds a new encoder per call: one, built once, writes the
# same text at a fraction of the cost (the rare records with a JSON tail).
_RECORD_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


class RecordError(ValueError):
    """The request cannot be stored (a callback that is not a spider method, odd meta)."""


def _method_name(spider: Spider, func: Any) -> str:
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
    """The record for `request` (the module's format); `url` replaces request.url (the
    canonical form) without building a new Request; `score` is the prioritizer's."""
    url = url or request.url
    if url.startswith("https://"):
        scheme, rest = "", url[8:]
    elif url.startswith("http://"):
        scheme, rest = "h", url[7:]
    else:
        scheme, rest = "-", url
    extra = _extra_fields(request, spider, keep_referer)
    try:
        tail = _RECORD_JSON.encode(extra) if extra else ""
    except (TypeError, ValueError) as exc:
        raise RecordError(f"request {request.url} has meta that is not JSON: {exc}") from None
    depth = request.meta.get("depth", 0)
    score_text = "" if score is None else round(score)
    size = len(tail) if tail else ""
    # One f-string, trailing empty fields cut (the module's format).
    head = f"~{_entered_at()},{score_text},{depth or ''},{scheme},{size}".rstrip(",")
    return f"{head}|{tail}{rest}"


def _extra_fields(request: Request, spider: Spider, keep_referer: bool) -> dict[str, Any]:
    """The record's rare fields, defaults omitted (the JSON tail)."""
    extra: dict[str, Any] = {}
    if request.callback is not None:
        callback = _method_name(spider, request.callback)
        if callback != "parse":
            extra["cb"] = callback
    if request.errback is not None:
        extra["eb"] = _method_name(spider, request.errback)
    if request.priority:
        extra["p"] = request.priority
    if request.dont_filter:
        extra["df"] = 1
    if request.method != "GET":
        extra["m"] = request.method
    if request.body:
        extra["b"] = base64.b64encode(request.body).decode("ascii")
    # Scrapy builds a request's headers and cb_kwargs on first read (2.13: _headers,
    # _cb_kwargs None until then): a link has neither, and reading them through the
    # properties would build both for every admitted URL.
    if getattr(request, "_headers", True) is not None:
        headers = _stored_headers(request, keep_referer)
        if headers:
            extra["h"] = headers
    meta = request.meta
    if not meta.keys() <= TRANSIENT_META:  # a link's meta is all transient
        extra["meta"] = {k: v for k, v in meta.items() if k not in TRANSIENT_META}
    if getattr(request, "_cb_kwargs", True) is not None and request.cb_kwargs:
        extra["kw"] = request.cb_kwargs
    return extra


_DIGITS36 = "0123456789abcdefghijklmnopqrstuvwxyz"


_stamp: tuple[int, str] = (-1, "")  # the last second stamped and its base-36 text


def _entered_at() -> str:
    """Base-36 epoch seconds, computed once per second (one per admitted URL)."""
    global _stamp
    now = int(time.time())
    if now != _stamp[0]:
        _stamp = (now, _base36(now))
    return _stamp[1]


def _base36(n: int) -> str:
    out = []
    while True:
        n, r = divmod(n, 36)
        out.append(_DIGITS36[r])
        if not n:
            return "".join(reversed(out))


_SCHEMES = {"": "https://", "h": "http://", "-": ""}


def parse_record(text: str) -> dict[str, Any]:
    """A record's fields as the JSON records held them: u, t, s, d and the rare ones.
    `text` is the record alone (no re-crawl or probe mark)."""
    if not text.startswith("~"):
        parsed: dict[str, Any] = json.loads(text)  # queued before the compact format
        return parsed
    bar = text.index("|")
    fields = [*text[1:bar].split(","), "", "", "", "", ""]
    t, score, depth, scheme, size = fields[:5]
    n = int(size) if size else 0
    record: dict[str, Any] = json.loads(text[bar + 1 : bar + 1 + n]) if n else {}
    record["u"] = _SCHEMES[scheme] + text[bar + 1 + n :]
    record["t"] = int(t, 36)
    if score:
        record["s"] = int(score)
    if depth:
        record["d"] = int(depth)
    return record


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
# The admit script marks a URL charged to its host's catch-all pattern (the coarse one of a
# URL without a query, or the host-wide one: its shape seen once, or no room for it, as
# traps.lua `catch_all` reads it): only such a URL is dropped at
# dispatch when its coarse pattern closes; a URL whose shape has its own pattern is not
# (a shop's products beside filter pages that closed /shop/*: traps.lua charge).
CATCH_MARK = "C|"
CATCH_META = "frontier_catch_all"  # a decoded catch-all URL's meta flag
# The admit script marks a URL it counted against its path's facet cap (a filter the cap
# let through): dispatch keeps it, where it drops a filter of a path sidebar that was
# queued before this worker saw the sidebar (Admission.unproven_filter).
FACET_MARK = "F|"
FACET_CAP_META = "frontier_facet_capped"  # a decoded capped filter's meta flag
# The lease script marks a record of an IP that is down (every fetch failed for
# FRONTIER_DOWN_AFTER): dispatch gives it up unfetched. Only in a lease's reply.
DOWN_MARK = "D|"
DOWN_META = "frontier_ip_down"  # a decoded down IP's record's meta flag
# A record's marks, outermost first: a lease's down mark, a probe's or a catch-all's, then
# a capped filter's.
_MARKS = (
    (DOWN_MARK, DOWN_META),
    (PROBE_MARK, PROBE_META),
    (CATCH_MARK, CATCH_META),
    (FACET_MARK, FACET_CAP_META),
)


def mark_recrawl(record: str, recrawl: bool) -> str:
    return RECRAWL_MARK + record if recrawl else record


def decode_request(raw: str | bytes, spider: Spider) -> Request:
    """Rebuild the Request a record was made from (its transient meta is not in it)."""
    text, flags = _marks(record_text(raw))
    record = parse_record(text)
    meta = dict(record.get("meta") or {})
    meta["depth"] = record.get("d", 0)
    if "s" in record:
        meta[SCORE_META] = record["s"]
    meta.update(dict.fromkeys(flags, True))
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
    """A queued record's text (with a probe mark, if any): the re-crawl mark cut."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    return text.removeprefix(RECRAWL_MARK)


def without_marks(text: str) -> str:
    """A record's text without its probe, catch-all or facet mark (record_text cut the
    re-crawl one)."""
    return _marks(text)[0]


def _marks(text: str) -> tuple[str, list[str]]:
    """A record's text without its marks, and their meta flags (_MARKS, in the order the
    admit script writes them)."""
    flags = []
    for mark, flag in _MARKS:
        if text.startswith(mark):
            flags.append(flag)
            text = text[len(mark) :]
    return text, flags


def front_entry_record(entry: str) -> str:
    """The record of a front-queue entry, "ip|lane|record" (before lanes: "ip|record")."""
    rest = entry.split("|", 1)[1]
    lane, sep, record = rest.partition("|")
    return record if sep and lane.isdigit() else rest


# No URL pattern (dont_filter requests, operator tools): no trap feedback, no caps.
NO_PATTERNS = ("", "", "", "", "")


class AdmitItem(NamedTuple):
    """One request to admit: seen_key '' skips URL-seen and budgets (dont_filter),
    ip '' parks it until its host resolves; priority -1 = the bucket of the score (with
    the host's importance and its pattern's feedback, in the admit script); patterns:
    fine, coarse, host-wide, path key, facet key, and family: its siblings' pattern
    (admission/patterns.py); referrer: the URL-seen key of (referring host, host), ''
    for a same-host link. A NamedTuple: immutable, and built in half a frozen dataclass's
    time (admission builds one per URL)."""

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
    seed: bool = False  # a seed's (or its redirect's): the host gets the seeded budget
    number: int = -1  # its counter in its pattern (patterns.number_of), -1 for none
    # The lease id of the page whose verdict waits on this link's admission (a sprawl
    # candidate's own-shape link, a listing copy's item: frontier/settled_acks.py), ''
    # for any other link.
    settles: str = ""

    def lua(self) -> list[Any]:
        fields = [
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
            int(self.seed),
            self.number,
        ]
        if self.settles:  # rare: only a sprawl candidate's or a listing copy's links
            fields.append(self.settles)
        return fields
