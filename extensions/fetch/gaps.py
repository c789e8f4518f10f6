"""Politeness gaps as this worker observes them: end of one fetch on an IP to the
start of the next one it sends there (DESIGN invariant 2, seen from the client).

Fed by two downloader signals: `request_reached_downloader` (start: the request
entered the downloader; the frontier keeps one request per IP, so it leaves the
slot queue at once; if it ever waited, the gap reads shorter, never longer, so a
violation is not hidden) and `request_left_downloader` (end: fires for every
download that entered the downloader, success or failure).

Memory is bounded: the last end time is kept for at most `max_ips` IPs (least
recently used dropped first; a dropped IP's next fetch yields no gap).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from extensions.bounded import keep_newest

if TYPE_CHECKING:
    from scrapy import Request

DEFAULT_MAX_IPS = 65_536


def request_ip(request: Request) -> str:
    """The politeness key of a request: the downloader slot (the frontier's key: the IP,
    or "<ip>@<host>" inside FRONTIER_HOST_IP_NETWORKS), else the frontier's IP, else the
    host (crawls without the frontier)."""
    meta = request.meta
    ip = meta.get("download_slot") or meta.get("frontier_ip")
    if ip:
        return str(ip)
    return urlsplit(request.url).hostname or ""


@dataclass(frozen=True)
class Start:
    """What a fetch start means for politeness: a gap in seconds, an overlap (another
    fetch on the IP still in flight here), or neither (first fetch on the IP)."""

    gap: float | None = None
    overlap: bool = False


class GapTracker:
    def __init__(self, max_ips: int = DEFAULT_MAX_IPS) -> None:
        if max_ips < 1:
            raise ValueError("max_ips must be >= 1")
        self.max_ips = max_ips
        self._last_end: OrderedDict[str, float] = OrderedDict()
        self._inflight: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._last_end)

    def started(self, ip: str, now: float) -> Start:
        inflight = self._inflight.get(ip, 0)
        self._inflight[ip] = inflight + 1
        if inflight:
            return Start(overlap=True)
        last_end = self._last_end.get(ip)
        if last_end is None:
            return Start()
        return Start(gap=max(0.0, now - last_end))

    def ended(self, ip: str, now: float) -> None:
        inflight = self._inflight.pop(ip, 0) - 1
        if inflight > 0:
            self._inflight[ip] = inflight
        keep_newest(self._last_end, ip, now, self.max_ips)
