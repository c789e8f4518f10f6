"""GapTracker: end-to-start gaps per IP, overlaps, and its memory bound."""

from __future__ import annotations

from scrapy import Request

from extensions.fetch.gaps import GapTracker, Start, request_ip


def test_gap_is_end_of_previous_fetch_to_start_of_next() -> None:
    gaps = GapTracker()
    assert gaps.started("10.0.0.1", 0.0) == Start()  # first fetch: no gap
    gaps.ended("10.0.0.1", 1.0)
    assert gaps.started("10.0.0.1", 3.5) == Start(gap=2.5)
    assert gaps.started("10.0.0.2", 3.5) == Start()  # IPs are independent


def test_a_start_while_the_ip_is_busy_is_an_overlap() -> None:
    gaps = GapTracker()
    gaps.started("ip", 0.0)
    assert gaps.started("ip", 0.1) == Start(overlap=True)
    gaps.ended("ip", 0.2)
    assert gaps.started("ip", 0.3) == Start(overlap=True)  # one still in flight
    gaps.ended("ip", 0.4)
    gaps.ended("ip", 0.5)
    assert gaps.started("ip", 1.5) == Start(gap=1.0)


def test_memory_is_bounded_least_recently_used_first() -> None:
    gaps = GapTracker(max_ips=2)
    for n, ip in enumerate(("a", "b", "c")):
        gaps.started(ip, n)
        gaps.ended(ip, n + 0.5)
    assert len(gaps) == 2
    assert gaps.started("a", 10.0) == Start()  # forgotten
    assert gaps.started("c", 10.0) == Start(gap=7.5)


def test_request_ip_prefers_the_frontier_ip() -> None:
    assert request_ip(Request("http://h.test/", meta={"frontier_ip": "1.2.3.4"})) == "1.2.3.4"
    assert request_ip(Request("http://h.test/", meta={"download_slot": "s"})) == "s"
    assert request_ip(Request("http://h.test:8080/x")) == "h.test"
