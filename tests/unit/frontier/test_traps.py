"""Crawl budget in the frontier's scripts (frontier/lua/traps.lua), on a real Redis and a
virtual clock: score lanes within an IP, trap feedback closing and reopening a URL
pattern (shared by workers, kept across restarts), the facet cap, the sized host
budget and host importance."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis.asyncio as aioredis

from extensions.admission.admit import seen_key
from extensions.admission.patterns import url_patterns
from extensions.admission.records import AdmitItem, without_marks
from extensions.frontier.core import DownloadEvent, Frontier
from extensions.state.keys import FrontierKeys
from tests.project_settings import project_frontier_config
from tests.unit.frontier.test_frontier_sim import VirtualClock

IP = "10.9.0.1"
HOST = "shop.test"
MakeFrontier = Callable[..., Frontier]


def item(
    url: str,
    score: float = 50.0,
    referrer: str = "",
    host: str = HOST,
    facet: bool = False,
    sitemap: bool = False,
) -> AdmitItem:
    p = url_patterns(url)
    return AdmitItem(
        seen_key(url),
        IP,
        host,
        -1,
        f'{{"u":"{url}"}}',
        (p.fine, p.coarse, p.host_wide, p.path_key, p.path_key if facet else ""),
        score=score,
        referrer=referrer,
        sitemap=sitemap,
        family=p.family,
    )


@pytest.fixture
def make(redis_url: str, redis_client: Any) -> Iterator[MakeFrontier]:
    clients: list[aioredis.Redis] = []
    clock = VirtualClock()

    def build(**traps: Any) -> Frontier:
        client = aioredis.Redis.from_url(redis_url)
        clients.append(client)
        base = project_frontier_config(delay=1.0, lease_ttl=60)
        config = dataclasses.replace(base, traps=dataclasses.replace(base.traps, **traps))
        return Frontier(client, FrontierKeys("traps"), config, clock=clock)

    yield build


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def fetch_all(frontier: Frontier, outcome: str | Callable[[str], str]) -> list[str]:
    """Lease every queued URL one at a time (the IP's delay passes), ack with `outcome`
    (or outcome(url))."""
    urls: list[str] = []
    clock = frontier.clock
    assert isinstance(clock, VirtualClock)
    for _ in range(200):
        reply = await frontier.lease(1)
        if not reply.leases:
            if reply.queued == 0:
                return urls
            clock.now += 1.0
            continue
        lease_id, record = reply.leases[0]
        url = without_marks(record)[6:-2]
        urls.append(url)
        p = url_patterns(url)
        pt = (p.fine, p.coarse, p.host_wide, p.path_key, p.family)
        done = DownloadEvent("done", lease_id, clock.now, 200)
        said = outcome if isinstance(outcome, str) else outcome(url)
        host = urlsplit(url).hostname or HOST
        ack = DownloadEvent("ack", lease_id, clock.now, host=host, outcome=said, patterns=pt)
        await frontier.report([done, ack])
    return urls


def test_within_an_ip_the_best_scored_url_goes_first(make: MakeFrontier) -> None:
    async def go() -> list[str]:
        frontier = make()
        scores = [12, 95, 47, 70, 30, 99]
        await frontier.admit([item(f"http://{HOST}/p{n}", s) for n, s in enumerate(scores)])
        return await fetch_all(frontier, "new")

    order = run(go())
    assert order == [f"http://{HOST}/p{n}" for n in (1, 5, 3, 2, 4, 0)]


def test_duplicates_close_a_pattern_then_fresh_pages_reopen_it(make: MakeFrontier) -> None:
    async def go() -> None:
        frontier = make(min_pages=5, close_share=0.8, reopen_after=3, probe_every=4)
        await frontier.admit([item(f"http://{HOST}/cal/{n}") for n in range(8)])
        fetched = await fetch_all(frontier, "duplicate")
        assert len(fetched) == 8
        keys = frontier.keys
        fine = url_patterns(f"http://{HOST}/cal/1").fine
        assert await frontier.redis.sismember(keys.key("closed_patterns"), fine)
        # Closed: new URLs refused and forgotten by URL-seen, one in probe_every let in.
        reply = await frontier.admit([item(f"http://{HOST}/cal/{n}") for n in range(100, 108)])
        assert reply.extra["refused"] == {"pattern_closed": 6}
        probes = await fetch_all(frontier, "new")
        assert len(probes) == 2
        # Two fresh probes: one short of reopening; a third fresh page reopens it.
        await frontier.admit([item(f"http://{HOST}/cal/{n}") for n in range(200, 204)])
        await fetch_all(frontier, "new")
        assert not await frontier.redis.sismember(keys.key("closed_patterns"), fine)
        reply = await frontier.admit([item(f"http://{HOST}/cal/{n}") for n in range(300, 305)])
        assert reply.extra["admitted"] == 5
        # The refused URLs were not marked seen: they come back now; the probes do not.
        reply = await frontier.admit([item(f"http://{HOST}/cal/{n}") for n in range(100, 108)])
        assert (reply.extra["admitted"], reply.extra["duplicate"]) == (6, 2)

    run(go())


def test_a_second_worker_sees_the_closed_pattern(make: MakeFrontier) -> None:
    async def go() -> dict[str, int]:
        one, two = make(min_pages=3), make(min_pages=3)
        await one.admit([item(f"http://{HOST}/s?sid={n}") for n in range(4)])
        await fetch_all(one, "duplicate")
        reply = await two.admit([item(f"http://{HOST}/s?sid={n}") for n in range(10, 13)])
        return dict(reply.extra["refused"])

    assert run(go()) == {"pattern_closed": 3}


def test_a_mixed_section_is_demoted_not_closed(make: MakeFrontier) -> None:
    async def go() -> str:
        frontier = make(min_pages=4, demote_share=0.5, close_share=0.8)
        await frontier.admit([item(f"http://{HOST}/tag/{n}") for n in range(6)])
        for outcome in ["new", "duplicate"] * 3:
            assert await fetch_one(frontier, outcome)
        raw = await frontier.redis.hget(frontier.keys.key("patterns"), f"{HOST}/tag/<N>")
        return raw.decode()

    state = run(go()).split(",")
    assert state[4] == "1"  # demoted: bad share 0.5 over >= 4 pages


async def fetch_one(frontier: Frontier, outcome: str) -> list[str]:
    clock = frontier.clock
    assert isinstance(clock, VirtualClock)
    clock.now += 1.0
    reply = await frontier.lease(1)
    for lease_id, record in reply.leases:
        url = record[6:-2]
        p = url_patterns(url)
        done = DownloadEvent("done", lease_id, clock.now, 200)
        ack = DownloadEvent(
            "ack",
            lease_id,
            clock.now,
            host=HOST,
            outcome=outcome,
            patterns=(p.fine, p.coarse, p.host_wide, p.path_key),
        )
        await frontier.report([done, ack])
    return [r for _, r in reply.leases]


def test_facet_combinations_of_one_path_are_capped(make: MakeFrontier) -> None:
    async def go() -> Any:
        frontier = make(facet_max=10)
        urls = [f"http://{HOST}/shop/?color={c}&size={s}" for c in range(6) for s in range(6)]
        return (await frontier.admit([item(u, facet=True) for u in urls])).extra

    extra = run(go())
    assert extra["admitted"] == 10 and extra["refused"] == {"facet_cap": 26}


def test_host_budget_grows_with_referring_hosts(make: MakeFrontier) -> None:
    async def go() -> tuple[int, int]:
        frontier = make(host_budget=5, budget_per_referrer=3, budget_per_sitemap_url=0)
        first = await frontier.admit([item(f"http://{HOST}/a{n}") for n in range(8)])
        # Two other hosts link here (once each counted, however often they link).
        refs = [seen_key(f"ref other{n}.test {HOST}") for n in (1, 2, 1)]
        links = [item(f"http://{HOST}/b{n}", referrer=r) for n, r in enumerate(refs)]
        links += [item(f"http://{HOST}/c{n}") for n in range(6)]
        second = await frontier.admit(links)
        return first.extra["admitted"], second.extra["admitted"]

    # 5 of the first 8; then the budget is 5 + 2 x 3 = 11: 6 more of the next 9.
    assert run(go()) == (5, 6)


def test_a_seeded_hosts_budget_starts_from_the_seeded_base(make: MakeFrontier) -> None:
    async def go() -> tuple[int, int, int]:
        frontier = make(host_budget=5, host_budget_seeded=9, budget_per_referrer=0)
        other = await frontier.admit(
            [item(f"http://b.test/a{n}", host="b.test") for n in range(12)]
        )
        # A redirect of a seed (no URL-seen key) marks its host too, before its links.
        seed = item(f"http://{HOST}/")._replace(seen_key="", seed=True)
        links = [item(f"http://{HOST}/a{n}") for n in range(12)]
        seeded = await frontier.admit([seed, *links])
        # Marked once: a later batch of the same host has the same budget.
        more = await frontier.admit([item(f"http://{HOST}/c{n}") for n in range(3)])
        return other.extra["admitted"], seeded.extra["admitted"] - 1, more.extra["admitted"]

    assert run(go()) == (5, 9, 0)


def test_referring_hosts_raise_a_hosts_urls_into_a_better_lane(make: MakeFrontier) -> None:
    async def go() -> dict[str, int]:
        frontier = make(host_weight=10, host_bonus_max=20)
        await frontier.admit([item("http://plain.test/x", 55, host="plain.test")])
        refs = [seen_key(f"ref r{n}.test {HOST}") for n in range(3)]
        await frontier.admit(
            [item(f"http://{HOST}/y{n}", 55, referrer=r) for n, r in enumerate(refs)]
        )
        lanes = {}
        for lane in range(frontier.config.lanes):
            for record in await frontier.redis.lrange(frontier.keys.back_queue(IP, lane), 0, -1):
                lanes[without_marks(record.decode())[6:-2]] = lane
        return lanes

    lanes = run(go())
    # 55 + 10 x log2(1 + referring hosts): 65, 70.8, 75 against plain.test's 55.
    assert lanes == {
        "http://plain.test/x": 4,
        f"http://{HOST}/y0": 3,
        f"http://{HOST}/y1": 2,
        f"http://{HOST}/y2": 2,
    }


def test_patterns_per_host_are_bounded(make: MakeFrontier) -> None:
    async def go() -> tuple[list[str], int]:
        frontier = make(patterns_per_host=3)
        slugs = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
        # Two URLs per shape (digits abstract): every shape recurs.
        urls = [f"http://{HOST}/blog/{s}-{n}-post" for s in slugs for n in (1, 2)]
        await frontier.admit([item(url) for url in urls])
        fields = await frontier.redis.hkeys(frontier.keys.key("patterns"))
        held = await frontier.redis.hget(frontier.keys.key("trap_hosts"), HOST)
        return sorted(f.decode() for f in fields), int(held)

    # alpha-1 is charged to the host (its shape and host/blog/* are first seen), alpha-2
    # creates its shape's record, beta-1 the recurring host/blog/*: then the host is full.
    fields, held = run(go())
    assert fields == [f"{HOST}/*", f"{HOST}/blog/*", f"{HOST}/blog/alpha-<N>-post"]
    assert held == 3


def test_a_shape_seen_once_gets_no_record(make: MakeFrontier) -> None:
    """Word slugs make every URL its own shape: none of them costs a pattern record."""

    async def go() -> tuple[list[str], int]:
        frontier = make()
        slugs = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
        await frontier.admit([item(f"http://{HOST}/blog/{s}-post") for s in slugs])
        fields = await frontier.redis.hkeys(frontier.keys.key("patterns"))
        stats = await frontier.redis.hgetall(frontier.keys.key("stats"))
        bloom = await frontier.redis.hget(frontier.keys.key("seen_bloom"), "c1")
        shapes = await frontier.redis.strlen(frontier.keys.key("shapes"))
        first_seen = int(stats[b"trap_shapes_first_seen"])
        return sorted(f.decode() for f in fields), first_seen, int(bloom), shapes

    capacity = project_frontier_config(delay=1.0).seen.capacity
    fields, first_seen, in_bloom, shape_bytes = run(go())
    assert fields == [f"{HOST}/*", f"{HOST}/blog/*"]
    assert first_seen == 8 + 1  # eight slugs and host/blog/* once
    # Shapes have their own bitmap (8 bits per key of the Bloom's first generation).
    assert in_bloom == 8
    assert shape_bytes == capacity


def test_the_shapes_bitmap_grows_with_url_seen(redis_url: str) -> None:
    """A small crawl holds a small bitmap: 8 bits per key of the newest Bloom generation,
    replaced (empty) when URL-seen starts a larger one."""

    async def go() -> list[tuple[int, int]]:
        client = aioredis.Redis.from_url(redis_url)
        base = project_frontier_config(delay=1.0)
        config = dataclasses.replace(base, seen=dataclasses.replace(base.seen, capacity=40))
        frontier = Frontier(client, FrontierKeys("shapes"), config, clock=VirtualClock())
        sizes = []
        for batch in range(3):
            urls = [f"http://{HOST}/w/{batch}-{n}/a{'b' * n}" for n in range(30)]
            await frontier.admit([item(url) for url in urls])
            generation = await client.hget(frontier.keys.key("seen_bloom"), "g")
            sizes.append((int(generation), await client.strlen(frontier.keys.key("shapes"))))
        await client.aclose()
        return sizes

    # 40 keys, then 80 (SEEN_GROWTH 2): 8 bits, one byte, per key of the newest.
    assert run(go()) == [(1, 40), (2, 80), (2, 80)]


def test_the_pattern_cap_binds_one_shape_not_a_catch_all(redis_url: str) -> None:
    """URL_MAX_PER_PATTERN caps a shape (/cal/<N>), never the catch-all of word slugs
    seen once each (a wiki's /wiki/<title>, a flat manual's /<name>.html)."""

    async def go() -> tuple[int, dict[str, int]]:
        client = aioredis.Redis.from_url(redis_url)
        config = dataclasses.replace(project_frontier_config(delay=1.0), max_per_pattern=5)
        frontier = Frontier(client, FrontierKeys("cap"), config, clock=VirtualClock())
        words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa"]
        slugs = [f"http://{HOST}/wiki/{a}_{b}" for a in words for b in words]
        flat = [f"http://{HOST}/{a}-{b}.html" for a in words for b in words]
        wiki = await frontier.admit([item(url) for url in [*slugs, *flat]])
        days = [item(f"http://{HOST}/cal/{n}") for n in range(20)]
        cal = await frontier.admit(days)
        await client.aclose()
        return wiki.extra["admitted"], {"admitted": cal.extra["admitted"], **cal.extra["refused"]}

    admitted, cal = run(go())
    assert admitted == 2 * 49
    assert cal == {"admitted": 5, "pattern_cap": 15}


def test_a_refused_url_costs_its_host_no_pattern_room(make: MakeFrontier) -> None:
    async def go() -> tuple[Any, int]:
        frontier = make(facet_max=1, patterns_per_host=3)
        urls = [f"http://{HOST}/shop/?color=red&{name}=1" for name in "abcde"]
        reply = await frontier.admit([item(u, facet=True) for u in urls])
        held = await frontier.redis.hget(frontier.keys.key("trap_hosts"), HOST)
        return reply.extra, int(held)

    extra, held = run(go())
    assert extra["admitted"] == 1 and extra["refused"] == {"facet_cap": 4}
    assert held == 2  # the admitted URL's pattern and its path's facet counter


def test_siblings_of_a_closed_section_are_refused_unless_a_sitemap_lists_them(
    make: MakeFrontier,
) -> None:
    async def go() -> tuple[dict[str, int], int]:
        frontier = make(min_pages=3, close_share=0.8, probe_every=50)
        await frontier.admit([item(f"http://{HOST}/shop/shoes/?page={n}") for n in range(4)])
        await fetch_all(frontier, "duplicate")  # closes ?page of shoes and its family
        bags = [item(f"http://{HOST}/shop/bags/?page={n}") for n in range(3)]
        refused = (await frontier.admit(bags)).extra["refused"]
        listed = item(f"http://{HOST}/shop/hats/?page=1", sitemap=True)
        return dict(refused), (await frontier.admit([listed])).extra["admitted"]

    refused, listed = run(go())
    assert refused == {"pattern_closed": 3}  # never fetched: the family was judged
    assert listed == 1


def test_subdomains_of_one_domain_judge_one_family_a_wildcard_trap_closes(
    make: MakeFrontier,
) -> None:
    """w0..w3.farm.test are four hosts, each with one page: per host, nothing closes."""

    def on(host: str, path: str = "/") -> AdmitItem:
        return item(f"http://{host}{path}", host=host)

    async def go() -> tuple[dict[str, int], int]:
        frontier = make(min_pages=3, close_share=0.8, probe_every=50)
        await frontier.admit([on(f"w{n}.farm.test") for n in range(4)])
        await fetch_all(frontier, "duplicate")
        later = [on(f"x{n}.farm.test") for n in range(3)]
        refused = (await frontier.admit(later)).extra["refused"]
        # The domain's own host, another domain's subdomain, another path: not judged.
        others = [on("farm.test"), on("w1.other.test"), on("w9.farm.test", "/about")]
        return dict(refused), (await frontier.admit(others)).extra["admitted"]

    refused, admitted = run(go())
    assert refused == {"pattern_closed": 3}
    assert admitted == 3


def test_a_copy_of_its_own_patterns_page_recounts_that_page(make: MakeFrontier) -> None:
    # A growing query: the first page is the template, each next one a copy of it.
    async def go(second: str) -> bool:
        frontier = make(min_pages=3, close_share=0.8)
        urls = [f"http://{HOST}/{second}?q=" + "+w" * n for n in range(1, 4)]  # own pattern
        for url in urls:  # one at a time: each page links the next
            await frontier.admit([item(url)])
            await fetch_all(frontier, lambda u: "new" if u == urls[0] else second)
        fine = url_patterns(urls[0]).fine
        return bool(await frontier.redis.sismember(frontier.keys.key("closed_patterns"), fine))

    assert run(go("copy")) is True  # new (recounted), copy, copy: closed after 3 pages
    assert run(go("duplicate")) is False  # new, duplicate, duplicate: 2 of 3, demoted
