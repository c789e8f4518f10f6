"""Per-origin robots state: origin keys, the Redis-shared verdict cache, and sitemaps.

The policy itself is :mod:`extensions.robots.rules` (RFC 9309 parsing, matching) and
:mod:`extensions.robots.verdicts` (what a fetch's status means).

Keys (prefix P is the crawl's key prefix, e.g. "crawlproj:{web}", or on a sharded crawl
the page shard of the origin's host, state/keys.py):
    P:robots:<origin>   string   RobotsVerdict JSON, PX = expires_at - now
A sharded crawl's verdicts spread over the page shards: on a Cluster a batch is read
with mget_nonatomic (one MGET per slot, pipelined per node), not one cross-slot MGET.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from urllib.parse import urljoin, urlsplit

from lxml import etree
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from extensions.bounded import keep_newest
from extensions.robots.verdicts import DISALLOW_ALL, RobotsVerdict
from extensions.state.connection import AnyAsyncRedis

logger = logging.getLogger(__name__)

_DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21}
SITEMAP_MAX_BYTES = 50 * 1024 * 1024  # sitemaps.org: 50 MiB uncompressed at most
_GZIP_MAGIC = b"\x1f\x8b"


# --- origins and keys ---------------------------------------------------------------------


def origin_of(url: str) -> str:
    """The origin "scheme://host[:port]" whose robots.txt governs `url` (RFC 9309 2.3).

    Host lower-cased (IDNA-encoded if needed), userinfo and default ports dropped, so that
    every spelling of one authority shares one verdict. ValueError if there is no host.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = parts.hostname  # lower-cased, brackets and userinfo removed
    if not scheme or not host:
        raise ValueError(f"no scheme or host in URL {url!r}")
    port = parts.port  # ValueError for a non-numeric or out-of-range port
    host = host.rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    elif not host.isascii():
        host = host.encode("idna").decode("ascii")
    if port is None or port == _DEFAULT_PORTS.get(scheme):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def robots_url(origin: str) -> str:
    return f"{origin}/robots.txt"


# --- the shared cache -------------------------------------------------------------------


class RobotsCache:
    """Verdicts per (scheme, host, port) origin in Redis, shared by all workers, plus a
    small local LRU in front of it. Verdicts never change before `expires_at`, so a local
    copy is exactly as good as Redis's until then."""

    def __init__(
        self,
        redis: AnyAsyncRedis,
        key_for: Callable[[str], str],
        now: Callable[[], float] = time.time,
        local_size: int = 10000,
    ) -> None:
        if local_size < 0:
            raise ValueError(f"local_size={local_size} must be >= 0")
        self._redis = redis
        self._key_for = key_for  # FrontierKeys.robots: key names live in keys.py
        self._now = now
        self._local_size = local_size
        self._local: OrderedDict[str, RobotsVerdict] = OrderedDict()

    def get_local(self, origin: str) -> RobotsVerdict | None:
        """The locally held verdict of `origin` if still valid; no I/O."""
        verdict = self._local.get(origin)
        if verdict is None:
            return None
        if verdict.expires_at <= self._now():
            del self._local[origin]
            return None
        self._local.move_to_end(origin)
        return verdict

    async def get_many(self, origins: Sequence[str]) -> dict[str, RobotsVerdict | None]:
        """Valid verdicts for `origins` (None where missing or expired), in one MGET (per
        Cluster node)."""
        found: dict[str, RobotsVerdict | None] = {o: self.get_local(o) for o in origins}
        missing = [o for o, v in found.items() if v is None]
        if not missing:
            return found
        keys = [self._key_for(o) for o in missing]
        if isinstance(self._redis, AsyncRedisCluster):
            raw = await self._redis.mget_nonatomic(keys)
        else:
            raw = await self._redis.mget(keys)
        now = self._now()
        for origin, value in zip(missing, raw, strict=True):
            verdict = self._decode(origin, value)
            if verdict is not None and verdict.expires_at > now:
                found[origin] = verdict
                self._remember(origin, verdict)
        return found

    async def put(self, origin: str, verdict: RobotsVerdict) -> None:
        """Store `verdict` for all workers until its expires_at."""
        ttl_ms = int((verdict.expires_at - self._now()) * 1000)
        if ttl_ms <= 0:
            logger.debug("robots verdict for %s already expired; not cached", origin)
            return
        self._remember(origin, verdict)  # first: kept here even if Redis refuses it
        await self._redis.set(self._key_for(origin), verdict.to_json(), px=ttl_ms)
        if verdict.kind == DISALLOW_ALL:
            logger.info(
                "robots.txt of %s unreachable (status %d): disallowing the origin for %.0f s",
                origin,
                verdict.status,
                ttl_ms / 1000,
            )

    def _remember(self, origin: str, verdict: RobotsVerdict) -> None:
        if self._local_size == 0:
            return
        keep_newest(self._local, origin, verdict, self._local_size)

    @staticmethod
    def _decode(origin: str, value: bytes | str | None) -> RobotsVerdict | None:
        if value is None:
            return None
        try:
            return RobotsVerdict.from_json(value)
        except ValueError:  # json.JSONDecodeError is a ValueError
            logger.warning("unreadable robots verdict for %s in Redis; refetching", origin)
            return None


# --- sitemaps (sitemaps.org protocol) ---------------------------------------------------


class SitemapTooLarge(ValueError):
    """A sitemap that is, or decompresses to, more than SITEMAP_MAX_BYTES."""


def parse_sitemap(
    body: bytes, url: str, max_bytes: int = SITEMAP_MAX_BYTES
) -> tuple[list[tuple[str, str | None]], list[str]]:
    """(page URLs with their <lastmod>, nested sitemap URLs) of a sitemap document.

    Handles <urlset>, <sitemapindex>, gzip (by magic bytes, whatever the headers say) and
    plain text (one URL per line). Relative locations are resolved against `url`; only
    http(s) URLs are returned. Raises SitemapTooLarge past `max_bytes` decompressed.
    """
    if body.startswith(_GZIP_MAGIC):
        body = _gunzip(body, max_bytes)
    elif len(body) > max_bytes:
        raise SitemapTooLarge(f"sitemap {url} is {len(body)} bytes, over {max_bytes}")
    head = body.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"<"):
        return _parse_xml(head, url)
    # sitemaps.org: a text sitemap holds full URLs only; anything else (an HTML error page
    # served in its place) is skipped rather than resolved into junk URLs.
    lines = head.decode("utf-8", errors="replace").split()
    return [(u, None) for u in lines if _is_absolute_http(u)], []


def _gunzip(body: bytes, max_bytes: int) -> bytes:
    """Decompress every gzip member, refusing output past `max_bytes` (gzip bombs)."""
    out: list[bytes] = []
    size = 0
    data = body
    while data.startswith(_GZIP_MAGIC):
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            chunk = inflater.decompress(data, max_bytes - size + 1)
        except zlib.error as exc:
            raise ValueError(f"corrupt gzip sitemap: {exc}") from exc
        size += len(chunk)
        if size > max_bytes or inflater.unconsumed_tail:
            raise SitemapTooLarge(f"gzip sitemap inflates past {max_bytes} bytes; refused")
        out.append(chunk)
        data = inflater.unused_data  # the next member of a multi-member file, if any
    return b"".join(out)


def _parse_xml(body: bytes, url: str) -> tuple[list[tuple[str, str | None]], list[str]]:
    # No entity expansion, no DTD or network access: a sitemap is untrusted input.
    parser = etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        recover=True,
        remove_comments=True,
    )
    root = etree.fromstring(body, parser=parser)
    if root is None:
        return [], []
    kind = etree.QName(root).localname
    entries = [_entry(child) for child in root if isinstance(child.tag, str)]
    locs = [loc for loc, _ in entries]
    if kind == "sitemapindex":
        return [], _absolute(locs, url)
    if kind != "urlset":
        logger.debug("sitemap %s has root <%s>, not urlset/sitemapindex", url, kind)
        return [], []
    pages = []
    for loc, lastmod in entries:
        resolved = _absolute([loc], url)
        if resolved:
            pages.append((resolved[0], lastmod))
    return pages, []


def _entry(element: etree._Element) -> tuple[str, str | None]:
    """(<loc>, <lastmod>) texts of one <url> or <sitemap> element, namespace-agnostic."""
    loc, lastmod = "", None
    for child in element:
        if not isinstance(child.tag, str):
            continue
        name = etree.QName(child).localname
        if name == "loc":
            loc = (child.text or "").strip()
        elif name == "lastmod":
            lastmod = (child.text or "").strip() or None
    return loc, lastmod


def _is_absolute_http(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unbalanced "[" in the authority
        return False


def _absolute(locations: Sequence[str], base: str) -> list[str]:
    out = []
    for location in locations:
        location = location.strip()
        if not location:
            continue
        absolute = urljoin(base, location)
        if _is_absolute_http(absolute):
            out.append(absolute)
    return out
