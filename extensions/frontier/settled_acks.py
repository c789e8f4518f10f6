"""Page verdicts that wait on their links: a sprawl page's and a listing copy's ack,
settled by the admit replies of the links the spider marked with the page's lease
(records.SETTLES_META). Batches sends a page's links before its ack, so by the time the
ack goes out its links' verdicts are in.

Sprawl (admission/sprawl.py): the spider calls a page "sprawl" from this worker's recent
links alone; whether another worker (or an earlier page) linked one of its own-shape links
is known only to URL-seen, in the admit script, which lists such pages' leases in its
reply ("settled"): a settled page is reported as "new". So is a "sprawl_chain" page (a
tarpit's third generation), whose verdict closes its pattern at once.

Listings (admission/new_items.py): the spider calls a near copy a listing's next page
when PRIORITY_NEW_ITEMS of its links are items new to this worker. With several workers a
link another worker queued is new here too, so a copy whose page another worker parsed
first looked like a listing, and its pattern did not close. The spider holds the copy's
outcome back ("listing/<outcome>") and marks its items; the admit script counts per page
the marked links it queued as new to the crawl ("fresh"), and the ack reports "new" when
PRIORITY_NEW_ITEMS or more were, else the outcome held back.

A verdict whose marked links still wait for their admit call is reported as "new": a
sprawl or copy verdict closes patterns, so it is never given on a guess; a trap signal
missed costs a page, a real page called a trap costs a section.

Stats: frontier/sprawl/reported   sprawl acks sent as such
       frontier/sprawl/settled    sprawl acks sent as "new" (a marked link seen before)
       frontier/sprawl/unsettled  sprawl acks sent as "new" (marked links not admitted yet)
       frontier/listing/new       listing copies with enough items new to the crawl
       frontier/listing/copy      listing copies sent as their copy outcome
       frontier/listing/unsettled listing copies sent as "new" (items not admitted yet)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from extensions.admission.new_items import LISTING
from extensions.admission.sprawl import SPRAWL_OUTCOMES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.statscollectors import StatsCollector

    from extensions.admission.records import AdmitItem
    from extensions.frontier.core import DownloadEvent

# Leases kept at most: each is dropped at its page's ack, so only the leases of pages
# released instead of acked stay behind.
MAX_SETTLED = 10_000


def _waits(outcome: str | None) -> bool:
    return outcome in SPRAWL_OUTCOMES or (outcome is not None and outcome.startswith(LISTING))


class SettledAcks:
    def __init__(self, stats: StatsCollector, new_items: int) -> None:
        self.stats = stats
        self.new_items = new_items  # PRIORITY_NEW_ITEMS
        self._settled: set[str] = set()  # leases of pages with a marked link seen before
        self._fresh: dict[str, int] = {}  # lease -> its marked links queued new to the crawl

    def heard(self, extra: dict[str, Any]) -> None:
        """An admit reply's settled and fresh pages (admit.lua)."""
        settled, fresh = extra.get("settled"), extra.get("fresh")
        if len(self._settled) > MAX_SETTLED or len(self._fresh) > MAX_SETTLED:
            self._settled.clear()  # released pages' leftovers; the rest come again
            self._fresh.clear()
        if settled:
            self._settled.update(settled)
        if fresh:  # {} when none (cjson)
            for lease, n in fresh.items():
                self._fresh[lease] = self._fresh.get(lease, 0) + int(n)

    def judged(
        self, events: list[DownloadEvent], waiting: Sequence[AdmitItem]
    ) -> list[DownloadEvent]:
        """`events` with each waiting verdict settled or sent as such; `waiting`: the
        admits not sent yet."""
        if not any(_waits(event.outcome) for event in events):
            return events
        unsent = {item.settles for item in waiting if item.settles}
        return [self._judge(e, unsent) if _waits(e.outcome) else e for e in events]

    def _judge(self, event: DownloadEvent, unsent: set[str]) -> DownloadEvent:
        lease, outcome = event.lease_id, event.outcome or ""
        seen, fresh = lease in self._settled, self._fresh.pop(lease, 0)
        self._settled.discard(lease)
        kind = "sprawl" if outcome in SPRAWL_OUTCOMES else "listing"
        # A sprawl page another page linked into; a copy with enough items new to the crawl.
        settled = seen if kind == "sprawl" else fresh >= self.new_items
        if settled:
            verdict = "settled" if kind == "sprawl" else "new"
        elif lease in unsent:
            verdict = "unsettled"
        else:
            verdict = "reported" if kind == "sprawl" else "copy"
        self.stats.inc_value(f"frontier/{kind}/{verdict}")
        if verdict == "reported":
            return event
        held = outcome.removeprefix(LISTING) if verdict == "copy" else "new"
        return dataclasses.replace(event, outcome=held)
