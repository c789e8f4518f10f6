"""robots.txt facts that belong to the IP or to the whole crawl, end to end (issue #13).

- Crawl-delay on a shared IP is the max over the hosts on it whose robots.txt is current,
  and it leaves with the robots.txt that set it.
- A robots.txt that keeps failing is given up after ROBOTS_MAX_ERROR_RETRIES unavailable
  answers counted by all workers together, and its 429's Retry-After is the IP's backoff.

The web is a thread of this process: one server address, virtual hosts by Host header,
a robots.txt per host that the test can change, and a log of every request.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import redis

from scripts.crawlrun import run_crawl, start_crawl, wait_crawl, write_seeds

Answer = tuple[int, dict[str, str], bytes]


class SharedIpWeb:
    """Hosts on one loopback address; robots(host, n) answers the host's n-th robots.txt
    request (n from 1), pages /, /p1 .. /p<pages> link each other."""

    def __init__(self, address: str, hosts: list[str], pages: int, robots: Callable[..., Answer]):
        self.address, self.hosts, self.pages, self.robots = address, hosts, pages, robots
        self.log: list[dict[str, Any]] = []
        self._robots_seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def answer(self, host: str, path: str) -> Answer:
        if path == "/robots.txt":
            with self._lock:
                n = self._robots_seen[host] = self._robots_seen.get(host, 0) + 1
            return self.robots(host, n)
        links = "".join(f'<a href="/p{i}">p{i}</a> ' for i in range(1, self.pages + 1))
        # Distinct prose per page: near duplicates would close the pattern (trap feedback).
        seed = hashlib.sha256(f"{host}{path}".encode()).hexdigest()
        prose = " ".join(seed[i : i + 5] for i in range(0, 60, 5))
        body = f"<html><body><p>{host} {path}: {prose}</p>{links}</body></html>"
        return 200, {"Content-Type": "text/html"}, body.encode()

    def __enter__(self) -> SharedIpWeb:
        web = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                start = time.time()
                host = (self.headers.get("Host") or "").split(":")[0]
                status, headers, body = web.answer(host, self.path)
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
                entry = {"host": host, "path": self.path, "t_start": start, "t_end": time.time()}
                with web._lock:
                    web.log.append(entry)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((self.address, 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def url(self, host: str, path: str = "/") -> str:
        assert self._server is not None
        return f"http://{host}:{self._server.server_address[1]}{path}"

    def hosts_map(self) -> dict[str, str]:
        return {host: self.address for host in self.hosts}

    def ordered(self) -> list[dict[str, Any]]:
        with self._lock:
            return sorted(self.log, key=lambda r: r["t_start"])


def gaps(log: list[dict[str, Any]]) -> list[tuple[float, dict[str, Any]]]:
    """(end of one request to the start of the next on the address, the next request)."""
    return [(b["t_start"] - a["t_end"], b) for a, b in itertools.pairwise(log)]


def robots_txt(body: str) -> Answer:
    return 200, {"Content-Type": "text/plain"}, body.encode()


def test_crawl_delay_of_a_shared_ip_is_the_max_of_its_current_hosts(tmp_path: Path) -> None:
    def robots(host: str, n: int) -> Answer:
        if host == "slow.test" and n == 1:
            return robots_txt("User-agent: *\nCrawl-delay: 3\n")
        if host == "fast.test":
            return robots_txt("User-agent: *\nCrawl-delay: 1\n")
        return robots_txt("User-agent: *\nAllow: /\n")  # slow.test after its first robots.txt

    with SharedIpWeb("127.0.0.71", ["slow.test", "fast.test"], 4, robots) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", [web.url(h) for h in web.hosts])
        settings = {
            "DNS_HOSTS_MAP": web.hosts_map(),
            "FRONTIER_DELAY": 0.2,
            "ROBOTS_CACHE_TTL": 7,  # slow.test's Crawl-delay 3 expires with its robots.txt
            "ROBOTS_SITEMAPS": False,
        }
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        log = web.ordered()
    assert result.returncode == 0, result.log[-3000:]
    assert {r["path"] for r in log if r["host"] == "fast.test"} >= {"/", "/p4"}
    slow_robots = [r for r in log if r["host"] == "slow.test" and r["path"] == "/robots.txt"]
    assert len(slow_robots) >= 2, "slow.test's robots.txt never expired"
    changed = slow_robots[1]["t_start"]
    before = [g for g, r in gaps(log) if r["t_start"] <= changed]
    after = [g for g, r in gaps(log) if r["t_start"] > changed]
    # fast.test's Crawl-delay 1, read after slow.test's 3, does not shorten the IP's gap.
    assert len(before) >= 3
    assert min(before) >= 3.0 - 0.01, before
    # slow.test's new robots.txt has none: the IP is back to fast.test's 1 s.
    assert after and min(after) >= 1.0 - 0.01, after
    assert min(after) < 2.0, after


def test_a_failing_robots_txt_is_given_up_by_all_workers_together(
    tmp_path: Path, redis_url: str
) -> None:
    redis.Redis.from_url(redis_url).flushall()
    retry_after = 2

    def robots(host: str, n: int) -> Answer:
        if host == "limited.test":
            return 429, {"Retry-After": str(retry_after)}, b"slow down\n"
        return robots_txt("User-agent: *\nAllow: /\n")

    limited = SharedIpWeb("127.0.0.72", ["limited.test"], 2, robots)
    open_web = SharedIpWeb("127.0.0.73", ["open.test"], 6, robots)
    with limited, open_web:
        seeds = [limited.url("limited.test"), limited.url("limited.test", "/p1")]
        seeds += [open_web.url("open.test")]
        path = write_seeds(tmp_path / "seeds.txt", seeds)
        settings = {
            "DNS_HOSTS_MAP": {**limited.hosts_map(), **open_web.hosts_map()},
            "FRONTIER_DELAY": 0.2,
            "REDIS_URL": redis_url,
            "ROBOTS_ERROR_TTL": 1,  # the floor under Retry-After: 2 s is honoured
            "ROBOTS_MAX_ERROR_RETRIES": 2,
            "ROBOTS_SITEMAPS": False,
        }
        started = time.time()
        workers = [start_crawl(path, tmp_path / f"data{n}", settings) for n in (1, 2)]
        outputs = [wait_crawl(w, 120) for w in workers]
        took = time.time() - started
        tried = [r for r in limited.ordered() if r["path"] == "/robots.txt"]
        opened = open_web.ordered()
    assert [w.returncode for w in workers] == [0, 0], outputs[0][1][-3000:]
    # ROBOTS_MAX_ERROR_RETRIES = 2: three tries in all, not three per worker.
    assert len(tried) == 3, [round(r["t_start"] - started, 2) for r in tried]
    assert [r["path"] for r in limited.ordered()] == ["/robots.txt"] * 3  # no page fetched
    spacing = [b["t_start"] - a["t_end"] for a, b in itertools.pairwise(tried)]
    # Retry-After is the IP's backoff: not a doubling from FRONTIER_BACKOFF_BASE (5 s, 10 s).
    assert min(spacing) >= retry_after - 0.01, spacing
    assert max(spacing) < retry_after + 2.5, spacing
    assert {"/", "/p6"} <= {r["path"] for r in opened}
    # The crawl ends once the real pages are done and the third try has given up.
    assert took < 3 * retry_after + 25, took


def test_a_robots_txt_hop_to_another_host_is_charged_to_that_hosts_ip(tmp_path: Path) -> None:
    delay = 1.0
    holder: list[SharedIpWeb] = []

    def robots(host: str, n: int) -> Answer:
        if host == "a.test":  # moved to b.test (www/apex, a CDN): RFC 9309 follows it
            return 301, {"Location": holder[0].url("b.test", "/robots.txt")}, b""
        return robots_txt("User-agent: *\nDisallow: /p2\n")

    a_web = SharedIpWeb("127.0.0.74", ["a.test"], 3, robots)
    b_web = SharedIpWeb("127.0.0.75", ["b.test"], 3, robots)
    with a_web, b_web:
        holder.append(b_web)
        seeds = write_seeds(tmp_path / "seeds.txt", [a_web.url("a.test"), b_web.url("b.test")])
        settings = {
            "DNS_HOSTS_MAP": {**a_web.hosts_map(), **b_web.hosts_map()},
            "FRONTIER_DELAY": delay,
            "ROBOTS_SITEMAPS": False,
        }
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=120)
        a_log, b_log = a_web.ordered(), b_web.ordered()
    assert result.returncode == 0, result.log[-3000:]
    # b.test's own robots.txt and a.test's hop to it, among b.test's pages.
    b_paths = [r["path"] for r in b_log]
    assert b_paths.count("/robots.txt") == 2, b_paths
    assert {"/", "/p1", "/p3"} <= set(b_paths), b_paths
    # The hop is leased ahead of b.test's due time, so b.test's queue cannot keep
    # overtaking it (before that, it went out only once b.test's pages were all done).
    assert b_paths.index("/robots.txt", 1) <= 2, b_paths
    # One request at a time on b.test's IP, each >= the delay after the previous one
    # ended: the hop is charged to b.test's politeness clock, not to a.test's.
    spacing = [round(g, 3) for g, _ in gaps(b_log)]
    assert min(spacing) >= delay - 0.01, spacing
    # b.test's rules are a.test's verdict: /p2 is disallowed there too.
    a_paths = [r["path"] for r in a_log]
    assert a_paths.count("/robots.txt") == 1 and "/p2" not in a_paths, a_paths
    assert {"/", "/p1", "/p3"} <= set(a_paths), a_paths
