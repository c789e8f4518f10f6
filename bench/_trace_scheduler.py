"""Diagnostics only: FrontierScheduler that logs its lease/wake decisions to a JSONL file.

    -s SCHEDULER=bench._trace_scheduler.TracingScheduler  (env BENCH_TRACE_FILE=path)

Used by `bench_politeness.py --trace` to explain where time goes between an IP
becoming due and its next fetch. Behaviour is unchanged: each wrapper only records
what it saw and calls the real method of the scheduler or its collaborators.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from extensions.frontier.scheduler import FrontierScheduler


class TracingScheduler(FrontierScheduler):
    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        path = os.environ.get("BENCH_TRACE_FILE") or "scheduler-trace.jsonl"
        self._trace = open(path, "a", encoding="utf-8")  # noqa: SIM115 - process lifetime

    def _t(self, event: str, **data: Any) -> None:
        self._trace.write(json.dumps({"t": time.time(), "ev": event, **data}) + "\n")

    async def _open(self, spider: Any) -> None:
        await super()._open(spider)
        self._trace_leases()
        self._trace_wakes()
        self._trace_flushes()

    def _trace_leases(self) -> None:
        session = self.session
        loop, book, frontier = session.leasing, session.book, session.frontier
        kick, lease, frontier_lease = loop.kick, loop.lease, frontier.lease
        seen: dict[str, Any] = {}

        def traced_kick() -> None:
            busy = loop.leasing is not None
            kick()
            self._t("kick", ignored=busy, buffer=len(book.buffer))

        async def traced_frontier_lease(n: int) -> Any:
            t = time.time()
            reply = await frontier_lease(n)
            seen.update(
                want=n,
                sent=t,
                got=len(reply.leases),
                next_due=reply.next_due,
                remaining=reply.remaining,
                ips=[i.rsplit("#", 1)[0] for i, _ in reply.leases],
            )
            return reply

        async def traced_lease() -> None:
            seen.clear()
            frontier.lease = traced_frontier_lease  # type: ignore[method-assign]
            try:
                await lease()
            finally:
                frontier.lease = frontier_lease  # type: ignore[method-assign]
                active = len(self.crawler.engine.downloader.active)
                wake_at = loop.timer.wake_at
                self._t("lease", active=active, buffer=len(book.buffer), wake_at=wake_at, **seen)

        loop.kick = traced_kick  # type: ignore[method-assign]
        loop.lease = traced_lease  # type: ignore[method-assign]

    def _trace_wakes(self) -> None:
        timer = self.session.leasing.timer
        schedule = timer.schedule

        def traced_schedule(at: float) -> None:
            before = timer.wake_at
            schedule(at)
            self._t("schedule_wake", at=at, previous=before, now_set=timer.wake_at)

        def traced_on_wake() -> None:
            self._t("on_wake")
            self.session.leasing.kick()  # looked up now: the traced kick

        timer.schedule = traced_schedule  # type: ignore[method-assign]
        timer.on_wake = traced_on_wake

    def _trace_flushes(self) -> None:
        batches = self.session.batches
        flush = batches.flush

        async def traced_flush() -> None:
            admits, events = len(batches.admits), len(batches.events)
            t = time.time()
            await flush()
            self._t("flush", admits=admits, events=events, took=time.time() - t)

        batches.flush = traced_flush  # type: ignore[method-assign]

    def next_request(self) -> Any:
        request = super().next_request()
        if request is not None:
            self._t("dispatch", ip=request.meta.get("frontier_ip"), url=request.url)
        return request

    def download_done(self, request: Any, *args: Any, **kwargs: Any) -> None:
        self._t("done", ip=request.meta.get("frontier_ip"), url=request.url)
        super().download_done(request, *args, **kwargs)
