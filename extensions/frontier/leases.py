"""The leases this worker holds (lease, not pop: DESIGN invariant 4).

A leased request is buffered here until the engine takes it, and its lease is held
until the request is acked or released; `downloading` tells a fetch that ended from
one that never reached the downloader.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Request


class LeaseBook:
    """The leases this worker holds, from the lease until the ack or release."""

    def __init__(self) -> None:
        self.buffer: deque[Request] = deque()  # leased, passed the gates, not handed out
        self.leases: dict[str, Request] = {}  # lease id -> request, until acked
        self.downloading: set[str] = set()  # lease ids whose fetch has not ended

    def take(self, lease_id: str, request: Request) -> None:
        self.leases[lease_id] = request
        self.downloading.add(lease_id)

    @property
    def processing(self) -> int:
        """Leases whose fetch ended and whose page the engine has not finished (parse,
        pipelines): their outcomes have not reached the frontier yet."""
        return len(self.leases) - len(self.downloading)

    def hand_out(self) -> Request | None:
        return self.buffer.popleft() if self.buffer else None

    def end_fetch(self, lease_id: str) -> bool:
        """The fetch behind `lease_id` ended; False if it was not downloading."""
        if lease_id not in self.downloading:
            return False
        self.downloading.discard(lease_id)
        return True

    def finish(self, lease_id: str) -> bool:
        """The engine is done with the request; False if the lease is not held here."""
        if self.leases.pop(lease_id, None) is None:
            return False
        self.downloading.discard(lease_id)
        return True

    def forget(self, lease_id: str) -> None:
        """Released or dropped before any fetch of its own."""
        self.leases.pop(lease_id, None)
        self.downloading.discard(lease_id)

    def drain(self) -> list[str]:
        """Closing: the buffered leases never reached the downloader."""
        lease_ids = [request.meta["frontier_lease"] for request in self.buffer]
        self.buffer.clear()
        for lease_id in lease_ids:
            self.leases.pop(lease_id, None)
        return lease_ids
