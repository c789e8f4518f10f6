"""FrontierRetryMiddleware: 429/503 outside Scrapy's retry budget, up to
FRONTIER_MAX_BACKOFFS, then given up with a log line and a stat; a timeout retried once."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import DownloadTimeoutError
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from twisted.internet.error import ConnectError as TxRefused
from twisted.internet.error import ConnectionLost as TxConnectionLost
from twisted.internet.error import ConnectionRefusedError as TxConnectionRefused

from extensions.frontier import retry
from extensions.frontier.retry import FrontierRetryMiddleware
from tests.project_settings import project_values


def middleware(monkeypatch: pytest.MonkeyPatch, **settings: Any) -> FrontierRetryMiddleware:
    crawler = get_crawler(Spider, project_values(settings))
    crawler.spider = Spider("t")
    crawler.spider.crawler = crawler
    crawler.stats.open_spider()
    monkeypatch.setattr(retry, "frontier_scheduler", lambda _: object())  # a frontier crawl
    return FrontierRetryMiddleware.from_crawler(crawler)


def answers(mw: FrontierRetryMiddleware, status: int, times: int) -> list[Request | Response]:
    request = Request("http://h.test/p")
    out: list[Request | Response] = []
    for _ in range(times):
        result = mw.process_response(request, Response(request.url, status=status))
        out.append(result)
        if isinstance(result, Response):
            break
        request = result
    return out


def test_429s_are_backoffs_not_retries_until_max_backoffs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    mw = middleware(monkeypatch, FRONTIER_MAX_BACKOFFS=4, RETRY_TIMES=1)
    with caplog.at_level(logging.WARNING):
        out = answers(mw, 429, 10)
    again = [r for r in out if isinstance(r, Request)]
    assert [r.meta[retry.BACKOFFS_META] for r in again] == [1, 2, 3, 4]
    assert all(r.dont_filter and "retry_times" not in r.meta for r in again)
    assert isinstance(out[-1], Response) and out[-1].status == 429  # the row's status
    stats = mw.crawler.stats
    assert stats.get_value("frontier/backoff_requeued") == 4
    assert stats.get_value("frontier/backoff_gave_up") == 1
    assert "Gave up on http://h.test/p: answered 429 after 4 backoffs" in caplog.text


def test_without_the_frontier_a_503_is_scrapys_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    mw = middleware(monkeypatch, RETRY_TIMES=1)
    monkeypatch.setattr(retry, "frontier_scheduler", lambda _: None)
    out = answers(mw, 503, 5)
    assert len(out) == 2 and out[0].meta["retry_times"] == 1


def test_a_timeout_is_retried_once_a_refusal_waits_other_failures_retry_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mw = middleware(monkeypatch, RETRY_TIMES=3, FRONTIER_MAX_BACKOFFS=5)

    def attempts(exc: Exception) -> int:
        request: Request | None = Request("http://h.test/p")
        tries = 0
        while isinstance(request, Request):
            tries += 1
            request = mw.process_exception(request, exc)  # type: ignore[assignment]
        return tries

    assert attempts(DownloadTimeoutError("took too long")) == 2
    assert attempts(TxConnectionLost()) == 4  # the server had the request: RETRY_TIMES
    # Never reached the server: 5 waits for its IP (outcome.lua's backoff; an IP down for
    # good is given up whole), outside RETRY_TIMES, then Scrapy's 3 retries.
    assert attempts(TxConnectionRefused()) == 5 + 3 + 1
    assert mw.crawler.stats.get_value("frontier/unreached_requeued") == 5


def test_a_refused_page_goes_back_as_itself_not_as_a_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    again = middleware(monkeypatch).process_exception(Request("http://h.test/p"), TxRefused())
    assert isinstance(again, Request) and again.dont_filter  # URL-seen has it already
    assert again.meta[retry.UNREACHED_META] == 1 and "retry_times" not in again.meta


@pytest.mark.parametrize("exc", [DownloadTimeoutError("took too long"), TxRefused()])
def test_an_unanswered_address_is_avoided_for_its_name(
    monkeypatch: pytest.MonkeyPatch, exc: Exception
) -> None:
    # A timeout (a firewalled host completes no handshake, a hung one answers nothing) and
    # a refusal alike: the name's next answer avoids the address, so the page's next try
    # goes to another of its addresses if it has one.
    avoided: list[tuple[str, str]] = []

    class Resolver:
        def avoid(self, host: str, ip: str) -> None:
            avoided.append((host, ip))

    monkeypatch.setattr(retry, "registered_resolver", Resolver)
    request = Request("http://h.test/p", meta={"frontier_ip": "127.0.0.9"})
    assert isinstance(middleware(monkeypatch).process_exception(request, exc), Request)
    assert avoided == [("h.test", "127.0.0.9")]
