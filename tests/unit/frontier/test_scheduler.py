"""FrontierScheduler's API and its collaborators on a real Redis and a virtual clock."""

from __future__ import annotations

import asyncio
import time

import pytest
from scrapy import Request

from extensions.frontier.middleware import FrontierDownloaderMiddleware
from extensions.frontier.scheduler import frontier_scheduler
from tests.unit.frontier.scheduler_harness import (
    VirtualClock,
    close,
    lease_now,
    open_scheduler,
    settle,
    until,
)


def test_admissions_go_in_one_batch_and_are_counted(settings) -> None:
    async def go():
        scheduler, _, _ = await open_scheduler(settings(), VirtualClock())
        urls = [
            "http://127.0.0.1/a",
            "http://127.0.0.1/b",
            "http://127.0.0.1/a",
            "http://127.0.0.1/" + "x" * 2000,
        ]
        queued = [scheduler.enqueue_request(Request(url)) for url in urls]
        pending = scheduler.session.batches.pending
        await settle(scheduler.session)
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        return queued, pending, stats

    queued, pending, stats = asyncio.run(go())
    # The repeated link is dropped before admission (admission/recent.py).
    assert queued == [True, True, False, False]
    assert pending  # nothing left for Redis inside enqueue_request
    assert stats["frontier/rejected/filter/length"] == 1
    assert stats["frontier/enqueued"] == 2
    assert stats["frontier/round_trips/admit"] == 1
    assert stats["frontier/admitted"] == 2
    assert stats["frontier/duplicate"] == stats["seen/dropped_local"] == 1
    assert stats["frontier/queued"] == 2


def test_a_lease_is_buffered_then_handed_out_and_acked_when_finished(settings) -> None:
    async def go():
        scheduler, engine, _ = await open_scheduler(settings(), VirtualClock())
        scheduler.enqueue_request(Request("http://127.0.0.1/page"))
        await settle(scheduler.session)
        assert scheduler.next_request() is None  # nothing leased yet: a lease is kicked
        await settle(scheduler.session)
        buffered = len(scheduler.session.book.buffer)
        wakes = engine._slot.wakes
        request = scheduler.next_request()
        assert request is not None
        engine._slot.remove_request(request)  # the engine is done with it: hooked
        await settle(scheduler.session)
        held = dict(scheduler.session.book.leases)
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        return buffered, wakes, request, held, stats

    buffered, wakes, request, held, stats = asyncio.run(go())
    assert buffered == 1
    assert wakes >= 1  # the lease woke the engine instead of its heartbeat
    assert request.url == "http://127.0.0.1/page"
    assert request.meta["frontier_ip"] == "127.0.0.1"
    assert request.meta["download_slot"] == "127.0.0.1"
    assert request.meta["frontier_lease"].startswith("127.0.0.1#")
    assert held == {}
    assert stats["frontier/dispatched"] == 1
    assert stats["frontier/leases"] == 0


def test_the_wake_timer_is_set_for_the_ready_heaps_top(settings) -> None:
    async def go():
        clock = VirtualClock()
        scheduler, _, _ = await open_scheduler(settings(FRONTIER_DELAY=5.0), clock)
        for path in ("one", "two"):
            scheduler.enqueue_request(Request(f"http://127.0.0.1/{path}"))
        [first] = await lease_now(scheduler)
        clock.now += 0.5  # the fetch took half a second
        scheduler.download_done(first, 200)
        scheduler.request_finished(first)
        await settle(scheduler.session)
        done_at = clock.now
        early = await lease_now(scheduler)
        wake_at = scheduler.session.leasing.timer.wake_at
        clock.now = done_at + 5.0
        due = await lease_now(scheduler)
        await close(scheduler)
        return done_at, early, wake_at, due

    done_at, early, wake_at, due = asyncio.run(go())
    assert early == []  # the IP owes its delay (DESIGN invariant 2)
    assert wake_at == pytest.approx(done_at + 5.0)  # not the 60 s poll interval
    assert [r.url for r in due] == ["http://127.0.0.1/two"]


def test_an_engine_tick_after_an_unfilled_lease_asks_again_only_after_a_change(
    settings,
) -> None:
    """A lease that got fewer than it asked for is not repeated on every engine tick
    (5 of 6 lease round trips a page found nothing): a reply, or the wake time, first."""

    async def go():
        clock = VirtualClock()
        scheduler, _, _ = await open_scheduler(settings(FRONTIER_DELAY=5.0), clock)
        for path in ("one", "two"):
            scheduler.enqueue_request(Request(f"http://127.0.0.1/{path}"))
        [first] = await lease_now(scheduler)  # 1 of 4 asked: the IP is in flight
        trips = []

        async def ticks() -> list[Request | None]:
            start = scheduler.stats.get_value("frontier/round_trips/lease")
            handed = []
            for _ in range(4):
                handed.append(scheduler.next_request())
                await settle(scheduler.session)
            trips.append(scheduler.stats.get_value("frontier/round_trips/lease") - start)
            return handed

        in_flight = await ticks()
        scheduler.download_done(first, 200)  # reports: the IP owes its delay from now
        scheduler.request_finished(first)
        await settle(scheduler.session)
        owing = await ticks()
        clock.now += 5.0  # the wake time passed (the real timer has not fired)
        due = await ticks()
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        return in_flight, owing, due, trips, stats

    in_flight, owing, due, trips, stats = asyncio.run(go())
    assert in_flight == owing == [None] * 4
    # None while nothing changed, nor after the report: its reply showed the heap's top
    # (the IP, owing its delay) not due.
    assert trips[:2] == [0, 0]
    assert [r.url for r in due if r is not None] == ["http://127.0.0.1/two"]
    assert stats["frontier/lease_waits/unchanged"] >= 7
    assert stats["frontier/lease_waits/not_due"] == 1


def test_a_done_waits_for_its_ack_and_shares_its_round_trip(settings) -> None:
    """At delay 0 a fetch's 'done' keeps its IP held until the page's ack (report.lua):
    sent alone it would buy nothing, so it goes with the ack, in one round trip, and the
    ack's reply shows the IP due at once: the next lease gets its next page."""

    async def go():
        scheduler, _, _ = await open_scheduler(settings(FRONTIER_DELAY=0), VirtualClock())
        for path in ("one", "two"):
            scheduler.enqueue_request(Request(f"http://127.0.0.1/{path}"))
        [first] = await lease_now(scheduler)

        def trips(key: str) -> int:
            return scheduler.stats.get_value(key, 0)

        before = (trips("frontier/round_trips/lease"), trips("frontier/round_trips/report"))
        scheduler.download_done(first, 200)
        scheduler.next_request()
        await settle(scheduler.session)
        after_done = (trips("frontier/round_trips/lease"), trips("frontier/round_trips/report"))
        scheduler.request_finished(first)
        await settle(scheduler.session)
        handed = [scheduler.next_request()]
        await settle(scheduler.session)
        handed.append(scheduler.next_request())
        reports = trips("frontier/round_trips/report") - before[1]
        await close(scheduler)
        return before, after_done, reports, handed

    before, after_done, reports, handed = asyncio.run(go())
    assert after_done == before  # no lease and no report for the 'done' alone
    assert reports == 1  # the 'done' and the ack together
    assert [r.url for r in handed if r is not None] == ["http://127.0.0.1/two"]


def test_a_done_whose_page_is_slow_goes_alone_and_opens_no_lease(settings, monkeypatch) -> None:
    """A page still in its pipelines after DONE_WAIT_S: its 'done' is sent alone (the
    lease's expiry is extended from it), and its reply shows the held IP not due, so no
    lease round trip follows (leasing.py's gate)."""
    monkeypatch.setattr("extensions.frontier.batching.DONE_WAIT_S", 0.05)

    async def go():
        scheduler, _, _ = await open_scheduler(settings(FRONTIER_DELAY=0), VirtualClock())
        for path in ("one", "two"):
            scheduler.enqueue_request(Request(f"http://127.0.0.1/{path}"))
        [first] = await lease_now(scheduler)
        leases = scheduler.stats.get_value("frontier/round_trips/lease")
        scheduler.download_done(first, 200)
        await asyncio.sleep(0.2)
        await settle(scheduler.session)
        scheduler.next_request()
        await settle(scheduler.session)
        new_leases = scheduler.stats.get_value("frontier/round_trips/lease") - leases
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        return new_leases, stats

    new_leases, stats = asyncio.run(go())
    assert stats["frontier/done_sent_alone"] == 1
    assert stats["frontier/lease_waits/not_due"] >= 1
    assert new_leases == 0


def test_an_unknown_origin_spends_the_lease_on_robots_txt(settings) -> None:
    robots = "User-agent: *\nDisallow: /private\nCrawl-delay: 7\nSitemap: http://127.0.0.1/sm.xml\n"

    async def go():
        clock = VirtualClock(start=time.time())
        scheduler, engine, _ = await open_scheduler(settings(ROBOTS_ENABLED=True), clock)
        engine.pages["http://127.0.0.1/robots.txt"] = (200, robots)
        scheduler.enqueue_request(Request("http://127.0.0.1/page"))
        handed = await lease_now(scheduler)
        frontier = scheduler.session.frontier
        crawl_delay = await frontier.redis.hget(frontier.keys.ip_state("127.0.0.1"), "crawl_delay")
        stats = scheduler.stats.get_stats()
        queued = stats["frontier/queued"]
        await close(scheduler)
        return handed, engine.downloads, crawl_delay, stats, queued

    handed, downloads, crawl_delay, stats, queued = asyncio.run(go())
    assert handed == []  # the page waits for its verdict
    [fetch] = downloads
    assert fetch.url == "http://127.0.0.1/robots.txt"
    assert fetch.meta["frontier_robots"] == "http://127.0.0.1"
    assert fetch.meta["download_slot"] == "127.0.0.1"
    assert fetch.meta["frontier_lease"].startswith("127.0.0.1#")
    assert float(crawl_delay) == 7.0
    assert stats["robots/sitemaps_queued"] == 1
    assert queued == 2  # the page is back in its queue, the sitemap joined it


def test_the_end_of_the_crawl_waits_for_redis_to_agree(settings) -> None:
    async def go():
        scheduler, engine, _ = await open_scheduler(settings(), VirtualClock())
        seen_zero = scheduler.session.ending.remaining
        # Another worker admits a URL after this one's last reply said zero.
        other, _, _ = await open_scheduler(settings(), VirtualClock())
        other.enqueue_request(Request("http://127.0.0.1/late"))
        await settle(other.session)
        wakes = engine._slot.wakes
        asked = scheduler.has_pending_requests()  # sends the confirming round trip
        await until(lambda: engine._slot.wakes > wakes)  # its reply wakes the engine
        late = scheduler.has_pending_requests()
        remaining = scheduler.session.ending.remaining
        await close(scheduler)
        await close(other)
        return seen_zero, asked, late, remaining

    seen_zero, asked, late, remaining = asyncio.run(go())
    assert seen_zero == 0
    assert asked  # a zero from a lease is not trusted alone
    assert late and remaining == 1  # the confirming round trip found the other's URL


def test_the_end_of_the_crawl_is_confirmed_when_redis_has_nothing(settings) -> None:
    async def go():
        scheduler, engine, _ = await open_scheduler(settings(), VirtualClock())
        wakes = engine._slot.wakes
        first = scheduler.has_pending_requests()
        await until(lambda: engine._slot.wakes > wakes)
        second = scheduler.has_pending_requests()
        await close(scheduler)
        return first, second

    assert asyncio.run(go()) == (True, False)


def test_the_middleware_reports_to_the_open_scheduler_only(settings) -> None:
    async def go():
        scheduler, _, _ = await open_scheduler(settings(), VirtualClock())
        scheduler.enqueue_request(Request("http://127.0.0.1/page"))
        [request] = await lease_now(scheduler)
        middleware = FrontierDownloaderMiddleware(scheduler.crawler)
        middleware.process_exception(request, TimeoutError())
        events = list(scheduler.session.batches.events)
        registered = frontier_scheduler(scheduler.crawler) is scheduler
        await close(scheduler)
        return events, registered, frontier_scheduler(scheduler.crawler)

    events, registered, after_close = asyncio.run(go())
    assert [(e.kind, e.timeout) for e in events] == [("done", True)]
    assert registered and after_close is None


def test_pages_awaiting_their_parse_bound_the_next_leases(settings) -> None:
    # Content feedback (trap outcomes, noise parameters) reaches the frontier when a page
    # is processed: no lease while FRONTIER_MAX_PROCESSING fetched pages await theirs.
    async def go():
        clock = VirtualClock()
        values = {"FRONTIER_DELAY": 0.0, "FRONTIER_MAX_PROCESSING": 2}
        scheduler, engine, _ = await open_scheduler(settings(**values), clock)  # 4 in flight
        for ip in range(1, 7):
            scheduler.enqueue_request(Request(f"http://127.0.0.{ip}/page"))
        await settle(scheduler.session)  # admitted: the engine is woken and asks
        scheduler.session.leasing.kick()  # one lease round trip, nothing handed out yet
        await settle(scheduler.session)
        book = scheduler.session.book
        first = [book.buffer.popleft() for _ in range(len(book.buffer))]
        engine.downloader.active.update(first)  # downloads are not held back
        for request in first:
            engine.downloader.active.discard(request)
            scheduler.download_done(request, 200)  # fetched, not yet parsed
        waiting = []
        for request in first[:2]:  # 3, then 2 pages await their parse: no room
            scheduler.request_finished(request)
            waiting += await lease_now(scheduler)
        scheduler.request_finished(first[2])
        after = await lease_now(scheduler)
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        return first, waiting, after, stats

    first, waiting, after, stats = asyncio.run(go())
    assert len(first) == 4  # CONCURRENT_REQUESTS
    assert waiting == []
    assert after  # 1 page awaits its parse: room again
    assert stats["frontier/lease_waits/processing"] >= 1


def test_a_flood_of_admissions_goes_in_chunks_before_the_acks(settings) -> None:
    """A sitemap's 2,500 URLs in one callback: one admit script each would hold Redis
    past the client's timeout, so they go ADMIT_CHUNK at a time, all before any event."""

    async def go():
        scheduler, _, _ = await open_scheduler(settings(), VirtualClock())
        queued = [
            scheduler.enqueue_request(Request(f"http://127.0.0.1/s/{n}")) for n in range(2500)
        ]
        await settle(scheduler.session)
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        return queued, stats

    queued, stats = asyncio.run(go())
    assert all(queued)
    assert stats["frontier/round_trips/admit"] == 3  # 1,000 + 1,000 + 500
    # One pattern on one host: its caps refuse some, in the admit script; all answered.
    refused = sum(v for k, v in stats.items() if k.startswith("frontier/rejected/"))
    assert stats["frontier/admitted"] + refused == 2500
