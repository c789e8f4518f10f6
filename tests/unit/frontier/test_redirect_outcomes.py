"""A redirect's outcome for trap feedback (frontier/middleware.py): a redirect home is a
soft 404; a hop of a redirect walk (admission/redirect_walks.py) is bad for its pattern."""

from __future__ import annotations

import asyncio

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse

from extensions.frontier.middleware import FrontierDownloaderMiddleware
from tests.unit.frontier.scheduler_harness import VirtualClock, close, lease_now, open_scheduler


@pytest.mark.parametrize(
    ("url", "location", "home"),
    [
        ("http://127.0.0.1/gone-page", "/", True),  # an unknown path sent home: a soft 404
        ("http://127.0.0.1/page/120", "http://127.0.0.1/", True),
        ("http://127.0.0.1/", "/en/", False),  # the home page itself moves
        ("http://127.0.0.1/old", "/new", False),  # a page that moved
        ("http://127.0.0.1/old", "https://127.0.0.1/", False),  # another origin
        ("http://127.0.0.1/old", "/?from=old", False),
        ("http://127.0.0.1/old", "http://[::1", False),  # a hostile Location: no target
    ],
)
def test_a_redirect_home_is_a_soft_404_for_trap_feedback(settings, url, location, home) -> None:
    async def go():
        scheduler, _, _ = await open_scheduler(settings(), VirtualClock())
        scheduler.enqueue_request(Request(url))
        [request] = await lease_now(scheduler)
        response = HtmlResponse(url, status=302, headers={"Location": location})
        FrontierDownloaderMiddleware(scheduler.crawler).process_response(request, response)
        scheduler.request_finished(request)
        acks = [e for e in scheduler.session.batches.events if e.kind == "ack"]
        await close(scheduler)
        return acks

    [ack] = asyncio.run(go())
    assert (ack.outcome == "soft_404") is home


@pytest.mark.parametrize(
    ("chain", "url", "location", "walk"),
    [
        # A hop reached in its shape that redirects in it again: a redirect walk.
        (["http://127.0.0.1/go/aa11bb22cc33"], "http://127.0.0.1/go/dd44ee55ff66", "/go/0a1b2c",
         True),
        # A page moved once, then on to another shape; a first hop from a link.
        (["http://127.0.0.1/docs/v1/x"], "http://127.0.0.1/docs/v2/x", "/docs/x", False),
        ([], "http://127.0.0.1/go/aa11bb22cc33", "/go/dd44ee55ff66", False),
        # http -> https of the same page is not in shape.
        (["http://127.0.0.1/go/aa11bb22cc33"], "http://127.0.0.1/go/dd44ee55ff66",
         "https://127.0.0.1/go/dd44ee55ff66", False),
    ],
)  # fmt: skip
def test_a_redirect_walks_hop_is_bad_for_trap_feedback(
    settings, chain, url, location, walk
) -> None:
    async def go():
        scheduler, _, _ = await open_scheduler(settings(), VirtualClock())
        scheduler.enqueue_request(Request(url, meta={"redirect_urls": chain}))
        [request] = await lease_now(scheduler)
        response = HtmlResponse(url, status=302, headers={"Location": location})
        FrontierDownloaderMiddleware(scheduler.crawler).process_response(request, response)
        scheduler.request_finished(request)
        acks = [e for e in scheduler.session.batches.events if e.kind == "ack"]
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        return acks, stats

    [ack], stats = asyncio.run(go())
    assert (ack.outcome == "redirect_walk") is walk
    assert stats.get("frontier/redirect_walk_hops", 0) == int(walk)
