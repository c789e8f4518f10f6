"""A sprawl page's ack, settled by the admit replies of its links (admission/sprawl.py).

The spider calls a page "sprawl" from this worker's recent links alone; whether another
worker (or an earlier page) linked one of its own-shape links is known only to URL-seen,
in the admit script, which lists such pages' leases in its reply ("settled"). Batches
sends a page's links before its ack, so by the time the ack goes out its links' verdicts
are in: a settled page is reported as "new". A page whose marked links are still waiting
for their admit call is reported as "new" too: a sprawl verdict is never given on a
guess (it closes patterns), only a sprawl signal missed.

Stats: frontier/sprawl/reported  sprawl acks sent as such
       frontier/sprawl/settled   sprawl acks sent as "new" (a marked link seen before)
       frontier/sprawl/unsettled sprawl acks sent as "new" (marked links not admitted yet)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.statscollectors import StatsCollector

    from extensions.admission.records import AdmitItem
    from extensions.frontier.core import DownloadEvent

# Settled leases kept at most: each is dropped at its page's ack, so only the leases of
# pages released instead of acked stay behind.
MAX_SETTLED = 10_000


class SprawlAcks:
    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self._settled: set[str] = set()  # leases of pages with a marked link seen before

    def heard(self, extra: dict[str, Any]) -> None:
        """An admit reply's settled pages (admit.lua)."""
        settled = extra.get("settled")
        if settled:
            if len(self._settled) > MAX_SETTLED:
                self._settled.clear()  # released pages' leftovers; the rest come again
            self._settled.update(settled)

    def judged(
        self, events: list[DownloadEvent], waiting: Sequence[AdmitItem]
    ) -> list[DownloadEvent]:
        """`events` with each sprawl ack settled or sent as such; `waiting`: the admits
        not sent yet."""
        if not any(event.outcome == "sprawl" for event in events):
            return events
        unsent = {item.sprawl_of for item in waiting if item.sprawl_of}
        return [self._judge(e, unsent) if e.outcome == "sprawl" else e for e in events]

    def _judge(self, event: DownloadEvent, unsent: set[str]) -> DownloadEvent:
        lease = event.lease_id
        if lease in self._settled:
            self._settled.discard(lease)
            verdict = "settled"
        elif lease in unsent:
            verdict = "unsettled"
        else:
            self.stats.inc_value("frontier/sprawl/reported")
            return event
        self.stats.inc_value(f"frontier/sprawl/{verdict}")
        return dataclasses.replace(event, outcome="new")
