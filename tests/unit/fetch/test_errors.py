"""Fetch error causes from the exceptions Scrapy 2.19 and Twisted actually raise."""

from __future__ import annotations

import socket
import ssl

import pytest
from OpenSSL import SSL
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    ResponseDataLossError,
)
from twisted.internet import error as txerror
from twisted.python.failure import Failure
from twisted.web.client import ResponseNeverReceived

from extensions.fetch.errors import CAUSES, classify, status_cause


def wrapped(outer: type[Exception], inner: BaseException) -> Exception:
    """`raise outer from inner`, as scrapy.utils._download_handlers does."""
    try:
        raise outer(str(inner)) from inner
    except Exception as exc:
        return exc


def never_received(reason: BaseException) -> ResponseNeverReceived:
    return ResponseNeverReceived([Failure(reason)])


@pytest.mark.parametrize(
    ("exc", "cause"),
    [
        (wrapped(CannotResolveHostError, txerror.DNSLookupError("x.test")), "dns"),
        (socket.gaierror(-2, "Name or service not known"), "dns"),
        (wrapped(DownloadConnectionRefusedError, txerror.ConnectionRefusedError()), "connect"),
        (txerror.NoRouteError(), "connect"),
        (wrapped(DownloadTimeoutError, txerror.TimeoutError()), "timeout"),
        (txerror.TCPTimedOutError(), "timeout"),  # a ConnectError too: timeout wins
        (
            wrapped(DownloadFailedError, never_received(SSL.Error([("SSL", "", "bad cert")]))),
            "tls",
        ),
        (never_received(ssl.SSLError("handshake")), "tls"),
        (wrapped(DownloadFailedError, never_received(txerror.ConnectionLost())), "dropped"),
        (ResponseDataLossError("truncated"), "dropped"),
        (ValueError("something else"), "other"),
    ],
)
def test_classify(exc: BaseException, cause: str) -> None:
    assert classify(exc) == cause
    assert cause in CAUSES


def test_status_cause() -> None:
    assert [status_cause(s) for s in (200, 304, 404, 429, 503, 600)] == [
        None,
        None,
        "http_4xx",
        "http_4xx",
        "http_5xx",
        None,
    ]


def test_a_cyclic_chain_does_not_loop() -> None:
    a, b = ValueError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert classify(a) == "other"
