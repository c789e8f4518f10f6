"""robots.txt against real servers: RobotsCache on a real redis-server, and the RFC 9309
status rules of verdict_from_response fed by real HTTP responses from 127.0.0.1.

The HTTP servers are `http.server` instances in daemon threads of this process: they
stop with the test (fixture teardown) or, at the latest, with the process.
"""

from __future__ import annotations

import asyncio
import email.utils
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import pytest
import redis
import redis.asyncio as aioredis

from extensions.robots.cache import RobotsCache, origin_of, robots_url
from extensions.robots.rules import RobotsPolicy
from extensions.robots.verdicts import (
    ALLOW_ALL,
    DISALLOW_ALL,
    MAX_REDIRECTS,
    RULES,
    RobotsVerdict,
    next_redirect,
    verdict_from_response,
)
from extensions.state.keys import FrontierKeys

KEYS = FrontierKeys("test")
UA = "crawlproj"
POLICY = RobotsPolicy(error_ttl=600.0, max_error_ttl=7200.0, fetch_timeout=0.5)
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


# --- real HTTP servers -------------------------------------------------------------------

# (status, headers, body) per path; a callable answer is computed per request.
Answer = tuple[int, dict[str, str], bytes]
Routes = dict[str, Answer | Callable[[], Answer]]


@dataclass
class Server:
    origin: str
    hits: list[str]


class Servers:
    """Loopback HTTP servers answering fixed routes; `close` stops them all."""

    def __init__(self) -> None:
        self.release = threading.Event()  # lets a deliberately slow handler finish early
        self._running: list[ThreadingHTTPServer] = []

    def __call__(self, routes: Routes) -> Server:
        hits: list[str] = []
        release = self.release

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                answer = routes.get(self.path, (404, {}, b"not found"))
                status, headers, body = answer() if callable(answer) else answer
                if release.is_set():
                    return
                self.send_response(status)
                for name, value in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._running.append(server)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        return Server(f"http://127.0.0.1:{server.server_address[1]}", hits)

    def close(self) -> None:
        self.release.set()
        for server in self._running:
            server.shutdown()
            server.server_close()


@pytest.fixture
def serve() -> Iterator[Servers]:
    servers = Servers()
    yield servers
    servers.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # hand the 3xx back: the redirect rule is what is under test


# No proxies from the environment: every request here must stay on 127.0.0.1.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirects)


def _get(url: str, timeout: float) -> Answer:
    """One GET; status 0 for a network failure or timeout."""
    try:
        with _OPENER.open(url, timeout=timeout) as resp:
            return resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers.items()), err.read()
    except (urllib.error.URLError, TimeoutError, ConnectionError):
        return 0, {}, b""


def fetch_verdict(origin: str, now: float | None = None) -> RobotsVerdict:
    """What the lead's Scrapy-side fetch does, with a blocking client (RFC 9309 2.3.1)."""
    url = robots_url(origin)
    for _ in range(MAX_REDIRECTS + 1):
        status, headers, body = _get(url, POLICY.fetch_timeout)
        target = next_redirect(url, status, headers)
        if target is None:
            break
        url = target
    # Past MAX_REDIRECTS the last 3xx goes in as is: "unavailable" (2.3.1.2).
    return verdict_from_response(status, body, headers, now or time.time(), POLICY, UA)


ROBOTS = b"""# a realistic file
User-agent: *
Disallow: /private/
Allow: /private/open$
Crawl-delay: 2

User-agent: crawlproj
Disallow: /no-crawlproj/
Crawl-delay: 5

Sitemap: https://example.com/sitemap.xml
"""


def test_200_parses_rules_crawl_delay_and_sitemaps(serve: Servers) -> None:
    server = serve({"/robots.txt": (200, {"Content-Type": "text/plain"}, ROBOTS)})
    v = fetch_verdict(server.origin)
    assert (v.kind, v.status, v.crawl_delay) == (RULES, 200, 5.0)
    assert v.sitemaps == ("https://example.com/sitemap.xml",)
    assert v.expires_at - v.fetched_at == POLICY.cache_ttl
    assert not v.allows(server.origin + "/no-crawlproj/x", UA)
    assert v.allows(server.origin + "/private/x", UA)  # our own group replaces "*"
    assert not v.allows(server.origin + "/private/x", "otherbot")
    assert v.allows(server.origin + "/private/open", "otherbot")


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<!doctype html><html><body><h1>Welcome</h1></body></html>", "text/html"),
        (b"User-agent: *\nDisallow: /caf\xe9/\nDisallow: /x\n", "text/plain; charset=latin-1"),
    ],
    ids=["html-page", "not-utf8"],
)
def test_200_odd_bodies(serve: Servers, body: bytes, content_type: str) -> None:
    server = serve({"/robots.txt": (200, {"Content-Type": content_type}, body)})
    v = fetch_verdict(server.origin)
    assert v.kind == RULES and v.allows(server.origin + "/page", UA)
    assert v.allows(server.origin + "/x", UA) is (content_type == "text/html")


@pytest.mark.parametrize(
    ("status", "headers", "kind", "ttl"),
    [
        (404, {}, ALLOW_ALL, POLICY.cache_ttl),
        (403, {}, ALLOW_ALL, POLICY.cache_ttl),
        (401, {"WWW-Authenticate": "Basic"}, ALLOW_ALL, POLICY.cache_ttl),
        (500, {}, DISALLOW_ALL, POLICY.error_ttl),
        (503, {"Retry-After": "120"}, DISALLOW_ALL, 120.0),
        (503, {"Retry-After": "99999999"}, DISALLOW_ALL, POLICY.max_error_ttl),
        (429, {}, DISALLOW_ALL, POLICY.error_ttl),
    ],
)
def test_status_rules_on_real_responses(
    serve: Servers, status: int, headers: dict[str, str], kind: str, ttl: float
) -> None:
    server = serve({"/robots.txt": (status, headers, b"User-agent: *\nDisallow: /\n")})
    v = fetch_verdict(server.origin)
    assert (v.kind, v.status) == (kind, status)
    assert v.expires_at - v.fetched_at == pytest.approx(ttl)
    assert v.allows(server.origin + "/page", UA) is (kind == ALLOW_ALL)


def test_429_with_http_date_retry_after(serve: Servers) -> None:
    def answer() -> Answer:
        when = email.utils.formatdate(time.time() + 900, usegmt=True)
        return 429, {"Retry-After": when}, b""

    server = serve({"/robots.txt": answer})
    v = fetch_verdict(server.origin)
    assert v.kind == DISALLOW_ALL
    assert v.expires_at - v.fetched_at == pytest.approx(900, abs=2)


def test_timeout_and_refused_connection_disallow_briefly(serve: Servers) -> None:
    def slow() -> Answer:
        serve.release.wait(POLICY.fetch_timeout * 4)
        return 200, {}, b"User-agent: *\nAllow: /\n"

    server = serve({"/robots.txt": slow})
    started = time.monotonic()
    v = fetch_verdict(server.origin)
    assert time.monotonic() - started < POLICY.fetch_timeout * 3
    assert (v.kind, v.status, v.expires_at - v.fetched_at) == (DISALLOW_ALL, 0, POLICY.error_ttl)

    v = fetch_verdict(f"http://127.0.0.1:{_closed_port()}")
    assert (v.kind, v.status) == (DISALLOW_ALL, 0)


def test_redirect_chain_across_origins_is_followed(serve: Servers) -> None:
    target = serve({"/robots.txt": (200, {}, b"User-agent: *\nDisallow: /secret\n")})
    hops: Routes = {
        "/robots.txt": (301, {"Location": "/hop1"}, b""),
        "/hop1": (302, {"Location": "/hop2"}, b""),
        "/hop2": (307, {"Location": target.origin + "/robots.txt"}, b""),
    }
    start = serve(hops)
    v = fetch_verdict(start.origin)
    assert v.kind == RULES and start.hits == ["/robots.txt", "/hop1", "/hop2"]
    assert not v.allows(start.origin + "/secret/x", UA)  # the rules apply to the first origin


def test_too_many_redirects_means_unavailable(serve: Servers) -> None:
    routes: Routes = {"/robots.txt": (301, {"Location": "/r1"}, b"")}
    for i in range(1, 10):
        routes[f"/r{i}"] = (302, {"Location": f"/r{i + 1}"}, b"")
    server = serve(routes)
    v = fetch_verdict(server.origin)
    assert len(server.hits) == MAX_REDIRECTS + 1
    assert (v.kind, v.status) == (ALLOW_ALL, 302)


# --- RobotsCache on a real redis-server ----------------------------------------------------


def _verdict(now: float, ttl: float, kind: str = RULES, body: str = "") -> RobotsVerdict:
    return RobotsVerdict(kind, body, None, (), now, now + ttl, 200)


@pytest.fixture
def redis_sync(redis_client: redis.Redis) -> redis.Redis:
    return redis_client  # flushed by the conftest fixture


def test_put_and_get_many_in_one_round_trip(redis_url: str, redis_sync: redis.Redis) -> None:
    async def go() -> dict[str, RobotsVerdict | None]:
        client = aioredis.Redis.from_url(redis_url)
        try:
            writer = RobotsCache(client, KEYS.robots)
            now = time.time()
            await writer.put("http://a.test", _verdict(now, 60, body="User-agent: *\n"))
            await writer.put("https://b.test:8443", _verdict(now, 60, kind=ALLOW_ALL))
            reader = RobotsCache(client, KEYS.robots)  # another worker: nothing local
            redis_sync.config_resetstat()
            return await reader.get_many(["http://a.test", "https://b.test:8443", "http://c.test"])
        finally:
            await client.aclose()

    found = run(go())
    assert found["http://a.test"].body == "User-agent: *\n"  # type: ignore[union-attr]
    assert found["https://b.test:8443"].kind == ALLOW_ALL  # type: ignore[union-attr]
    assert found["http://c.test"] is None
    stats = redis_sync.info("commandstats")
    assert stats["cmdstat_mget"]["calls"] == 1 and "cmdstat_get" not in stats
    assert redis_sync.exists(KEYS.robots("http://a.test"))


def test_local_hits_skip_redis(redis_url: str, redis_sync: redis.Redis) -> None:
    async def go() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            cache = RobotsCache(client, KEYS.robots, local_size=2)
            now = time.time()
            for name in ("a", "b", "c"):
                await cache.put(f"http://{name}.test", _verdict(now, 60))
            assert cache.get_local("http://a.test") is None  # evicted: LRU of size 2
            assert cache.get_local("http://c.test") is not None
            redis_sync.config_resetstat()
            found = await cache.get_many(["http://b.test", "http://c.test"])
            assert all(found.values())
            assert "cmdstat_mget" not in redis_sync.info("commandstats")
        finally:
            await client.aclose()

    run(go())


def test_redis_expiry_follows_expires_at(redis_url: str, redis_sync: redis.Redis) -> None:
    async def go() -> tuple[RobotsVerdict | None, RobotsVerdict | None]:
        client = aioredis.Redis.from_url(redis_url)
        try:
            await RobotsCache(client, KEYS.robots).put("http://a.test", _verdict(time.time(), 0.3))
            pttl = redis_sync.pttl(KEYS.robots("http://a.test"))
            assert 0 < pttl <= 300
            before = await RobotsCache(client, KEYS.robots).get_many(["http://a.test"])
            await asyncio.sleep(0.5)
            after = await RobotsCache(client, KEYS.robots).get_many(["http://a.test"])
            return before["http://a.test"], after["http://a.test"]
        finally:
            await client.aclose()

    before, after = run(go())
    assert before is not None and after is None
    assert not redis_sync.exists(KEYS.robots("http://a.test"))


def test_expiry_by_the_cache_clock(redis_url: str, redis_sync: redis.Redis) -> None:
    clock = [1000.0]

    async def go() -> None:
        client = aioredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            cache = RobotsCache(client, KEYS.robots, now=lambda: clock[0])
            await cache.put("http://a.test", _verdict(clock[0], 10))
            await cache.put("http://old.test", _verdict(clock[0] - 20, 10))  # already expired
            assert not redis_sync.exists(KEYS.robots("http://old.test"))
            clock[0] += 11
            assert cache.get_local("http://a.test") is None
            other = RobotsCache(client, KEYS.robots, now=lambda: clock[0])
            assert (await other.get_many(["http://a.test"]))["http://a.test"] is None
            assert redis_sync.exists(KEYS.robots("http://a.test"))  # Redis TTL is real
        finally:
            await client.aclose()

    run(go())


def test_unreadable_value_is_a_miss(redis_url: str, redis_sync: redis.Redis) -> None:
    redis_sync.set(KEYS.robots("http://a.test"), b"\x80not json")

    async def go() -> RobotsVerdict | None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            return (await RobotsCache(client, KEYS.robots).get_many(["http://a.test"]))[
                "http://a.test"
            ]
        finally:
            await client.aclose()

    assert run(go()) is None


def test_fetched_verdict_round_trips_through_the_cache(
    serve: Servers, redis_url: str, redis_sync: redis.Redis
) -> None:
    server = serve({"/robots.txt": (200, {}, ROBOTS)})
    fetched = fetch_verdict(server.origin)

    async def go() -> RobotsVerdict | None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            await RobotsCache(client, KEYS.robots).put(origin_of(server.origin + "/x"), fetched)
            page = server.origin + "/no-crawlproj/page"
            found = await RobotsCache(client, KEYS.robots).get_many([origin_of(page)])
            return found[origin_of(page)]
        finally:
            await client.aclose()

    cached = run(go())
    assert cached == fetched
    assert not cached.allows(server.origin + "/no-crawlproj/page", UA)  # type: ignore[union-attr]
