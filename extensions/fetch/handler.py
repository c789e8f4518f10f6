"""HTTP(S) download handler with a connect timeout apart from the total timeout.

Scrapy uses DOWNLOAD_TIMEOUT for both the TCP connect and the whole download. A
crawler wants a dead or black-holed host to fail in seconds (its IP's lease and
slot are blocked meanwhile) while a slow but alive server still gets the full
DOWNLOAD_TIMEOUT to send a page. DOWNLOAD_CONNECT_TIMEOUT bounds the connect.

A leased request connects to the IP the frontier charged, not to whatever the
downloader's resolver answers (leased_ip.py; its stats are counted here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler, _ScrapyAgent
from scrapy.exceptions import NotConfigured
from scrapy.utils._download_handlers import normalize_bind_address, wrap_twisted_exceptions
from scrapy.utils.defer import maybe_deferred_to_future

from extensions.config import Setting, Table, above, read
from extensions.fetch.leased_ip import LeasedIPAgent, leased_ip

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response


@dataclass(frozen=True)
class HandlerSettings:
    connect_timeout: float  # seconds; the whole download keeps DOWNLOAD_TIMEOUT


HANDLER = Table(
    HandlerSettings, Setting("DOWNLOAD_CONNECT_TIMEOUT", "connect_timeout", float, above(0))
)


class _ConnectTimeoutAgent(_ScrapyAgent):
    def __init__(self, *args: Any, connect_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._connect_timeout_cap = connect_timeout

    def _get_agent(self, request: Request, timeout: float) -> Any:
        timeout = min(timeout, self._connect_timeout_cap)
        stats = self._crawler.stats
        ip = leased_ip(request)
        if request.meta.get("proxy") or ip is None:
            route = "proxy" if request.meta.get("proxy") else "resolved"
            if stats is not None:
                stats.inc_value(f"fetch/connect/{route}")
            return super()._get_agent(request, timeout)
        if stats is not None:
            stats.inc_value("fetch/connect/leased_ip")
        from twisted.internet import reactor  # the installed one, as Scrapy does

        bind = normalize_bind_address(request.meta.get("bindaddress") or self._bindAddress)
        return LeasedIPAgent(
            ip=ip,
            reactor=reactor,
            contextFactory=self._contextFactory,
            connectTimeout=timeout,
            bindAddress=bind,
            pool=self._pool,
        )


class ConnectTimeoutHTTPDownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        try:
            self._connect_timeout = read(HANDLER, crawler.settings).connect_timeout
        except ValueError as exc:
            raise NotConfigured(str(exc)) from None

    async def download_request(self, request: Request) -> Response:
        # Scrapy's own handler builds its agent inline; this mirrors it with ours.
        agent = _ConnectTimeoutAgent(
            contextFactory=self._contextFactory,
            bindAddress=self._bind_address,
            pool=self._pool,
            maxsize=self._default_maxsize,
            warnsize=self._default_warnsize,
            fail_on_dataloss=self._fail_on_dataloss,
            crawler=self._crawler,
            tls_verbose_logging=self._tls_verbose_logging,
            connect_timeout=self._connect_timeout,
        )
        with wrap_twisted_exceptions():
            return await maybe_deferred_to_future(agent.download_request(request))
