"""The connection goes to the IP the frontier charged (DESIGN invariant 7).

Scrapy's downloader resolves host names on its own (its own cache, no TTL, the first
address), so a host with several addresses, or whose record changed since the
frontier resolved it, would be fetched from an IP whose politeness clock was never
charged. A leased request names its IP (meta["frontier_ip"], set at the lease and
copied to the robots.txt fetch the lease is spent on): the connection goes there,
while the Host header and the TLS SNI / certificate hostname check keep the name.
Pooled connections are keyed by that IP too, so a connection to a host's old address
is not reused once the frontier moved the host elsewhere.

The IP is trusted for one host only: the host it was leased for (meta[LEASED_HOST_META]
when a component leased an IP for another host, else the origin whose robots.txt the
lease is spent on, else the request's own host): sending a request for another host to
the first host's address would ask the wrong server. A robots.txt redirect to another
host leases that host's IP and names the host (frontier/hops.py).

With a proxy (meta["proxy"], HttpProxyMiddleware's HTTP_PROXY/HTTPS_PROXY), the proxy
connects and resolves the name itself: nothing here can choose its address.

Stats (one counter per connection route):
    fetch/connect/leased_ip  connected to the IP the frontier charged
    fetch/connect/proxy      through a proxy, which resolves the name
    fetch/connect/resolved   no IP leased for this host: the downloader's resolver
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.core.downloader.handlers.http11 import _BindAddressAgent
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.endpoints import TCP4ClientEndpoint, TCP6ClientEndpoint, wrapClientTLS
from twisted.web.error import SchemeNotSupported

if TYPE_CHECKING:
    from scrapy import Request
    from twisted.internet.defer import Deferred
    from twisted.internet.interfaces import IStreamClientEndpoint
    from twisted.web.client import URI
    from twisted.web.http_headers import Headers as TxHeaders
    from twisted.web.iweb import IBodyProducer, IResponse

LEASED_IP_META = "frontier_ip"  # the leased IP (extensions/frontier/leasing.py)
ROBOTS_META = "frontier_robots"  # the origin whose robots.txt a lease is spent on (dispatch.py)
LEASED_HOST_META = "frontier_ip_host"  # the host an IP was leased for, when not the URL's


def leased_host(request: Request) -> str | None:
    """The host whose politeness clock the request's IP was charged for."""
    meta = request.meta
    if meta.get(LEASED_HOST_META):
        return str(meta[LEASED_HOST_META]).lower()
    if meta.get(ROBOTS_META):
        return urlsplit(str(meta[ROBOTS_META])).hostname
    return urlparse_cached(request).hostname


def leased_ip(request: Request) -> str | None:
    """The address to connect to: the leased IP when it was charged for this request's
    host; None (resolve as usual) for an unleased request or another host's IP."""
    raw = request.meta.get(LEASED_IP_META)
    if not raw:
        return None
    try:
        address = ipaddress.ip_address(str(raw))
    except ValueError:
        return None  # a politeness key that is not an address: nothing to connect to
    if urlparse_cached(request).hostname != leased_host(request):
        return None
    return str(address)


class LeasedIPAgent(_BindAddressAgent):
    """Scrapy's direct agent with every connection to one IP: the endpoint mirrors
    Twisted's _StandardEndpointFactory.endpointForURI (TCP, TLS for https) with the IP
    in place of the name, and the TLS creator still gets the name (SNI, certificate)."""

    def __init__(self, *, ip: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.leased_ip = ip

    def _getEndpoint(self, uri: URI) -> IStreamClientEndpoint:
        factory = self._endpointFactory
        kwargs: dict[str, Any] = {"bindAddress": factory._bindAddress}
        if factory._connectTimeout is not None:
            kwargs["timeout"] = factory._connectTimeout
        tcp = TCP6ClientEndpoint if ":" in self.leased_ip else TCP4ClientEndpoint
        endpoint = tcp(self._reactor, self.leased_ip, uri.port, **kwargs)
        if uri.scheme == b"http":
            return endpoint
        if uri.scheme == b"https":
            creator = factory._policyForHTTPS.creatorForNetloc(uri.host, uri.port)
            return wrapClientTLS(creator, endpoint)
        raise SchemeNotSupported(f"Unsupported scheme: {uri.scheme!r}")

    def _requestWithEndpoint(
        self,
        key: tuple[Any, ...],
        endpoint: IStreamClientEndpoint,
        method: bytes,
        parsedURI: URI,
        headers: TxHeaders | None,
        bodyProducer: IBodyProducer | None,
        requestPath: bytes,
    ) -> Deferred[IResponse]:
        # A pooled connection serves only requests for the same IP: after the frontier
        # moves a host, a connection kept open to its old address is not reused.
        key += (self.leased_ip,)
        # Scrapy annotates the endpoint narrower than Twisted; a TLS-wrapped one is fine.
        return super()._requestWithEndpoint(
            key,
            endpoint,  # type: ignore[arg-type]
            method,
            parsedURI,
            headers,
            bodyProducer,
            requestPath,
        )
