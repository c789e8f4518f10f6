"""Queued records without their IP's home authority (frontier/lua/authority.lua): the
bytes in Redis lose the host, every record leaves the queues whole (virtual clock, real
Redis, records as admission encodes them)."""

from __future__ import annotations

from collections.abc import Callable

from scrapy import Request, Spider

from extensions.admission.records import (
    AdmitItem,
    decode_request,
    encode_request,
    mark_recrawl,
)
from extensions.frontier.core import Frontier
from tests.unit.frontier.test_frontier_sim import DELAY_S, VirtualClock, finish, run

MakeFrontier = Callable[..., tuple[Frontier, VirtualClock]]
SHARED_IP = "10.7.0.1"  # shared hosting: a.test first, then b.test:8080
OTHER_IP = "10.7.0.2"
THIRD_IP = "10.7.0.3"


class _Spider(Spider):
    name = "authority"

    def parse(self, response):  # pragma: no cover - never called
        return None

    def parse_item(self, response):  # pragma: no cover - never called
        return None


SPIDER = _Spider()
URLS = [
    (SHARED_IP, "https://a.test/one?q=1", {}),
    (SHARED_IP, "https://b.test:8080/two", {}),
    (SHARED_IP, "http://a.test/three", {}),  # http: "a.test" is still the authority
    (SHARED_IP, "https://a.test/four", {"callback": SPIDER.parse_item, "meta": {"k": "/x"}}),
    (SHARED_IP, "https://a.test/", {"recrawl": True}),
    (OTHER_IP, "https://c.test/five", {"depth": 3}),
    (OTHER_IP, "ftp://c.test/six", {}),  # another scheme: stored whole, never elided
    # JSON's length counts characters: this record's URL is not that many bytes on, and
    # must not make "<end of JSON>d.test" the IP's home (d.test/eight would stay whole).
    (THIRD_IP, "https://d.test/seven", {"meta": {"note": "caf\u00e9"}}),
    (THIRD_IP, "https://d.test/eight", {}),
]


def _item(n: int, ip: str, url: str, extra: dict) -> AdmitItem:
    recrawl = extra.pop("recrawl", False)
    depth = extra.pop("depth", 0)
    request = Request(url, **extra)
    request.meta["depth"] = depth
    record = mark_recrawl(encode_request(request, SPIDER, score=40.0 + n), recrawl)
    return AdmitItem(f"k{n}", ip, url.split("/")[2], 2, record)


def _items() -> list[AdmitItem]:
    return [_item(n, ip, url, dict(extra)) for n, (ip, url, extra) in enumerate(URLS)]


async def _queued(frontier: Frontier) -> list[str]:
    keys = [k.decode() for k in await frontier.redis.keys("*")]
    entries: list[str] = []
    for key in keys:
        if await frontier.redis.type(key) == b"list":
            entries += [e.decode() for e in await frontier.redis.lrange(key, 0, -1)]
    return entries


async def _lease_all(frontier: Frontier, clock: VirtualClock) -> list[Request]:
    requests: list[Request] = []
    for _ in range(40):
        reply = await frontier.lease(5)
        for lease_id, record in reply.leases:
            requests.append(decode_request(record, SPIDER))
            await finish(frontier, lease_id, clock.now)
        if not reply.leases and reply.queued == 0:
            break
        clock.now += DELAY_S + 0.1
    return requests


def test_records_are_queued_without_the_home_authority_and_leased_whole(
    make_frontier: MakeFrontier,
) -> None:
    async def go() -> tuple[list[str], list[Request]]:
        # One back queue: OTHER_IP's records wait, elided, in a front queue.
        frontier, clock = make_frontier(back_queues=1)
        await frontier.admit(_items())
        queued = await _queued(frontier)
        return queued, await _lease_all(frontier, clock)

    queued, leased = run(go())
    assert len(queued) == len(URLS)
    text = "\n".join(queued)
    for elided in ("a.test/one", "a.test/three", "a.test/four", "c.test/five", "d.test/eight"):
        assert elided not in text  # the home authorities
    assert "d.test/seven" in text  # kept whole: its JSON is not ASCII
    assert "b.test:8080/two" in text  # another host on the shared IP keeps its own
    assert "ftp://c.test/six" in text
    by_url = {r.url: r for r in leased}
    assert sorted(by_url) == sorted(url for _, url, _ in URLS)
    assert by_url["https://a.test/four"].callback == SPIDER.parse_item
    assert by_url["https://a.test/four"].meta["k"] == "/x"
    assert by_url["https://c.test/five"].meta["depth"] == 3
    assert by_url["https://d.test/seven"].meta["note"] == "caf\u00e9"


def test_a_reclaimed_lease_is_requeued_and_leased_whole_again(
    make_frontier: MakeFrontier,
) -> None:
    async def go() -> tuple[str, str]:
        frontier, clock = make_frontier()
        await frontier.admit(_items()[:1])
        first = (await frontier.lease(1)).leases[0][1]
        clock.now += 61.0  # lease_ttl 60: the worker died, the record goes back
        # Reclaimed mid-download, so the IP is charged as if fetched: due after the delay.
        assert (await frontier.lease(1)).leases == []
        clock.now += DELAY_S
        return first, (await frontier.lease(1)).leases[0][1]

    first, again = run(go())
    assert first == again
    assert decode_request(again, SPIDER).url == "https://a.test/one?q=1"
