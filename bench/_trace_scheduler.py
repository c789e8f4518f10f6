"""Diagnostics only: FrontierScheduler that logs its lease/wake decisions to a JSONL file.

    -s SCHEDULER=bench._trace_scheduler.TracingScheduler  (env BENCH_TRACE_FILE=path)

Used by `bench_politeness.py --trace` to explain where time goes between an IP
becoming due and its next fetch. Behaviour is unchanged: each method only records
what it saw and calls the real one.
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

    def _kick_lease(self) -> None:
        busy = self._lease_task is not None
        super()._kick_lease()
        self._t("kick", ignored=busy, buffer=len(self._buffer))

    async def _lease(self) -> None:
        assert self.frontier is not None
        original = self.frontier.lease
        seen: dict[str, Any] = {}

        async def lease(n: int) -> Any:
            t = time.time()
            reply = await original(n)
            seen.update(
                want=n,
                sent=t,
                got=len(reply.leases),
                next_due=reply.next_due,
                remaining=reply.remaining,
                ips=[i.rsplit("#", 1)[0] for i, _ in reply.leases],
            )
            return reply

        self.frontier.lease = lease  # type: ignore[method-assign]
        try:
            await super()._lease()
        finally:
            self.frontier.lease = original  # type: ignore[method-assign]
            active = len(self.crawler.engine.downloader.active)  # type: ignore[union-attr]
            self._t("lease", active=active, buffer=len(self._buffer), wake_at=self._wake_at, **seen)

    def _schedule_wake(self, at: float) -> None:
        before = self._wake_at
        super()._schedule_wake(at)
        self._t("schedule_wake", at=at, previous=before, now_set=self._wake_at)

    def _on_wake(self) -> None:
        self._t("on_wake")
        super()._on_wake()

    def next_request(self) -> Any:
        request = super().next_request()
        if request is not None:
            self._t("dispatch", ip=request.meta.get("frontier_ip"), url=request.url)
        return request

    def download_done(self, request: Any, *args: Any, **kwargs: Any) -> None:
        self._t("done", ip=request.meta.get("frontier_ip"), url=request.url)
        super().download_done(request, *args, **kwargs)

    async def _flush(self) -> None:
        admits, events = len(self._admit_batch), len(self._events)
        t = time.time()
        await super()._flush()
        self._t("flush", admits=admits, events=events, took=time.time() - t)
