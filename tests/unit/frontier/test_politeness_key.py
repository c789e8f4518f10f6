"""The politeness key (FRONTIER_HOST_IP_NETWORKS): two hosts on one address inside the
networks get a slot each, outside them one slot; against the real scripts on a virtual
clock (one shard and four), the scheduler's lease meta, and the operator verbs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from scrapy import Request
from scrapy.settings import Settings

from extensions.admission.politeness_key import HOST_IP_KEYS, PolitenessKeys, parse_networks
from extensions.admission.records import AdmitItem
from extensions.config import read
from extensions.frontier.admin import FrontierAdmin
from extensions.frontier.core import DownloadEvent, Frontier, FrontierReply
from extensions.frontier.parked import ParkedHosts
from extensions.frontier.sharded import ShardedFrontier
from extensions.state.connection import connect_url
from extensions.state.keys import FrontierKeys, ShardedKeys
from tests.project_settings import project_frontier_config
from tests.unit.frontier.scheduler_harness import VirtualClock, close, lease_now, open_scheduler

DELAY_S = 1.0
FETCH_S = 0.2
CDN = "203.0.113.7"  # inside NETWORKS
PLAIN = "198.51.100.7"  # outside
KEYS = PolitenessKeys(parse_networks(["203.0.113.0/24", "2001:db8::/32"]))
CONFIG = project_frontier_config(delay=DELAY_S, lease_ttl=60)


def items(ip: str, hosts: tuple[str, ...] = ("a.cdn", "b.cdn"), per_host: int = 3) -> list[Any]:
    return [
        AdmitItem(f"{ip}{h}{n}", KEYS.key(ip, h), h, 2, f'{{"u":"http://{h}/{n}"}}')
        for n in range(per_host)
        for h in hosts
    ]


def key_of(lease_id: str) -> str:
    return lease_id.rsplit("#", 1)[0]


def test_the_key_is_the_host_ip_pair_inside_the_networks_only() -> None:
    assert KEYS.key(CDN, "a.cdn") == f"{CDN}@a.cdn"
    assert KEYS.key(PLAIN, "a.cdn") == PLAIN
    assert KEYS.key("2001:db8::1", "v6.cdn") == "2001:db8::1@v6.cdn"
    assert KEYS.key("", "a.cdn") == ""  # unresolved: parked by host, as before
    assert PolitenessKeys(()).key(CDN, "a.cdn") == CDN  # the default: per IP everywhere


def test_a_bad_network_is_named_with_the_setting() -> None:
    settings = Settings({"FRONTIER_HOST_IP_NETWORKS": "203.0.113.0/24,10.0.0.0/33"})
    with pytest.raises(ValueError, match=r"^FRONTIER_HOST_IP_NETWORKS must be CIDR networks"):
        read(HOST_IP_KEYS, settings)
    comma_list = Settings({"FRONTIER_HOST_IP_NETWORKS": "203.0.113.0/24, 2001:db8::/32"})
    assert read(HOST_IP_KEYS, comma_list) == KEYS


@pytest.fixture
def frontier(redis_url: str, redis_client: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """(frontier, clock): param 1 = one shard (the crawl's keys), 4 = a sharded frontier."""
    clock = VirtualClock()
    client = aioredis.Redis.from_url(redis_url)
    shards = getattr(request, "param", 1)
    if shards == 1:
        yield Frontier(client, FrontierKeys("pk"), CONFIG, clock=clock), clock
    else:
        yield ShardedFrontier(client, ShardedKeys("pk", shards), CONFIG, clock=clock), clock


async def fetch(frontier: Any, clock: VirtualClock, lease_id: str) -> None:
    """The lease's fetch takes FETCH_S, then it is reported and acked."""
    at = clock.now + FETCH_S
    await frontier.report(
        [DownloadEvent("done", lease_id, at, 200), DownloadEvent("ack", lease_id, at)]
    )


@pytest.mark.parametrize("frontier", [1, 4], indirect=True, ids=["one-shard", "four-shards"])
def test_two_hosts_on_a_cdn_address_get_two_slots(frontier: Any) -> None:
    frontier, clock = frontier

    async def go() -> tuple[list[str], list[str], list[str]]:
        await frontier.admit(items(CDN))
        leases = (await frontier.lease(10)).leases
        # Each key's clock is its own: a's fetch ends, b's is still in flight.
        await fetch(frontier, clock, next(i for i, _ in leases if "@a.cdn#" in i))
        clock.now += FETCH_S + DELAY_S - 0.01
        early = [key_of(i) for i, _ in (await frontier.lease(10)).leases]
        clock.now += 0.02
        due = [key_of(i) for i, _ in (await frontier.lease(10)).leases]
        return [key_of(i) for i, _ in leases], early, due

    first, early, due = asyncio.run(go())
    assert sorted(first) == [f"{CDN}@a.cdn", f"{CDN}@b.cdn"]  # both at once
    assert early == []  # b is still in flight: one request per key
    assert due == [f"{CDN}@a.cdn"]  # a's gap >= the delay, counted from a's own end


def test_the_same_hosts_outside_the_networks_share_one_slot(frontier: Any) -> None:
    frontier, clock = frontier

    async def go() -> tuple[list[str], list[str], list[str]]:
        await frontier.admit(items(PLAIN))
        first = await frontier.lease(10)
        await fetch(frontier, clock, first.leases[0][0])
        clock.now += FETCH_S + DELAY_S - 0.01
        early = (await frontier.lease(10)).leases
        clock.now += 0.02
        due = (await frontier.lease(10)).leases
        return (
            [key_of(i) for i, _ in first.leases],
            [i for i, _ in early],
            [key_of(i) for i, _ in due],
        )

    first, early, due = asyncio.run(go())
    assert (first, early, due) == ([PLAIN], [], [PLAIN])


def test_keys_of_one_address_live_in_its_shard() -> None:
    keys = ShardedKeys("pk", 16)
    placed = {keys.index_of(KEYS.key(CDN, f"h{n}.cdn")) for n in range(50)}
    assert placed == {keys.index_of(CDN)}


def test_crawl_delay_is_kept_per_key(frontier: Any) -> None:
    frontier, clock = frontier

    async def go() -> dict[str, float]:
        await frontier.admit(items(CDN))
        leases = (await frontier.lease(10)).leases
        a_key = f"{CDN}@a.cdn"
        await frontier.set_crawl_delay(a_key, "a.cdn", 3.0, clock.now + 3600)
        for lease_id, _ in leases:
            await fetch(frontier, clock, lease_id)
        ready = await frontier.redis.zrange(frontier.keys.key("ready"), 0, -1, withscores=True)
        return {k.decode(): score - clock.now for k, score in ready}

    due = asyncio.run(go())
    assert due == {
        f"{CDN}@a.cdn": pytest.approx(FETCH_S + 3.0),  # its robots.txt's Crawl-delay
        f"{CDN}@b.cdn": pytest.approx(FETCH_S + DELAY_S),  # a neighbour's does not apply
    }


def test_a_lease_names_the_bare_address_and_the_keys_slot(settings: Any) -> None:
    pins = {"a.cdn": CDN, "b.cdn": CDN}
    values = {
        "FRONTIER_HOST_IP_NETWORKS": ["203.0.113.0/24"],
        "DNS_HOSTS_MAP": pins,
        "DNS_ALLOWED_NETWORKS": ["203.0.113.0/24"],
    }

    async def go() -> list[Request]:
        scheduler, _, _ = await open_scheduler(settings(**values), VirtualClock())
        for host in pins:
            scheduler.enqueue_request(Request(f"http://{host}/"))
        handed = await lease_now(scheduler)
        await close(scheduler)
        return handed

    handed = sorted(asyncio.run(go()), key=lambda r: r.url)
    assert [r.meta["frontier_ip"] for r in handed] == [CDN, CDN]  # where the handler connects
    assert [r.meta["download_slot"] for r in handed] == [f"{CDN}@a.cdn", f"{CDN}@b.cdn"]


def test_a_parked_host_is_routed_to_its_key() -> None:
    routed: list[tuple[str, str]] = []

    class Recorder:
        async def route_pending(self, host: str, ip: str = "") -> FrontierReply:
            routed.append((host, ip))
            return FrontierReply()

    parked = ParkedHosts(
        frontier=Recorder(),  # type: ignore[arg-type]
        resolver=None,  # type: ignore[arg-type]
        background=type("B", (), {"stats": None})(),
        note=lambda reply: None,
        clock=lambda: 0.0,
        retries=0,
        retry_delay_s=1.0,
        retry_due=lambda at: None,
        politeness=KEYS,
    )
    asyncio.run(parked._route("a.cdn", CDN))
    asyncio.run(parked._route("a.plain", PLAIN))
    assert routed == [("a.cdn", f"{CDN}@a.cdn"), ("a.plain", PLAIN)]


# ---- operator verbs ------------------------------------------------------------------


@pytest.fixture
def admin(redis_url: str, redis_client: Any) -> Iterator[FrontierAdmin]:
    client = connect_url(redis_url)
    pins = {"a.cdn": CDN, "b.cdn": CDN}
    yield FrontierAdmin(client, ShardedKeys("pk", 1), pins.get, KEYS)
    client.close()


def test_a_host_names_its_key_and_the_address_all_of_its_hosts(
    admin: FrontierAdmin, frontier: Any
) -> None:
    frontier, clock = frontier
    assert admin.ip_of("A.cdn.") == f"{CDN}@a.cdn"
    assert admin.ip_of(f"{CDN}@b.cdn") == f"{CDN}@b.cdn"
    assert admin.ip_of(CDN) == CDN

    async def leased() -> list[str]:
        return sorted(key_of(i) for i, _ in (await frontier.lease(10)).leases)

    async def go() -> tuple[list[str], list[str], list[str]]:
        await frontier.admit(items(CDN, per_host=1))
        assert admin.set_active("a.cdn", False).changed == 1  # pauses a only
        only_b = await leased()
        admin.set_active("a.cdn", True)
        admin.set_active(CDN, False)  # the address: every host on it
        clock.now += 10
        await frontier.admit(items(CDN, hosts=("c.cdn",), per_host=1))
        none = await leased()
        admin.set_active(CDN, True)
        clock.now += 10
        return only_b, none, await leased()

    only_b, none, rest = asyncio.run(go())
    assert only_b == [f"{CDN}@b.cdn"]
    assert none == []  # c, admitted after the pause, is paused with its address
    assert rest == [f"{CDN}@a.cdn", f"{CDN}@c.cdn"]


def test_throttling_the_address_spaces_each_of_its_hosts(
    admin: FrontierAdmin, frontier: Any
) -> None:
    frontier, clock = frontier

    async def go() -> dict[str, float]:
        await frontier.admit(items(CDN))
        admin.set_delay(CDN, 5.0)
        for lease_id, _ in (await frontier.lease(10)).leases:
            await fetch(frontier, clock, lease_id)
        ready = await frontier.redis.zrange(frontier.keys.key("ready"), 0, -1, withscores=True)
        return {k.decode(): score - clock.now for k, score in ready}

    assert asyncio.run(go()) == {
        f"{CDN}@a.cdn": pytest.approx(FETCH_S + 5.0),
        f"{CDN}@b.cdn": pytest.approx(FETCH_S + 5.0),
    }
    state = admin.ip_state(CDN, CONFIG.lanes)
    assert state.delays == {"override": 5.0}
    assert sorted(state.host_keys) == [f"{CDN}@a.cdn", f"{CDN}@b.cdn"]
    assert state.host_keys[f"{CDN}@a.cdn"]["queued"] == 2
    host = admin.ip_state(admin.ip_of("a.cdn"), CONFIG.lanes)
    assert (host.ip, host.queued, host.host_keys) == (f"{CDN}@a.cdn", 2, {})


def test_blocking_the_address_moves_its_hosts_waiting_on_the_heap(
    admin: FrontierAdmin, frontier: Any
) -> None:
    frontier, clock = frontier
    until = clock.now + 100

    async def go() -> list[Any]:
        await frontier.admit(items(CDN))
        assert admin.block_until(CDN, until).changed == 3  # the address and its two hosts
        clock.now += 99
        return (await frontier.lease(10)).leases

    assert asyncio.run(go()) == []
    for key in (f"{CDN}@a.cdn", f"{CDN}@b.cdn"):
        assert admin.ip_state(key, CONFIG.lanes).next_fetch_at == pytest.approx(until)
