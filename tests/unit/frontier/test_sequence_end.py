"""Past the end of a numbered sequence (frontier/lua/traps.lua): a pattern whose pages
are numbered (/page/N, ?page=N) learns where the sequence ends from dead numbers above
its highest live one, refuses larger numbers, and lifts the end when a page past it
turns out live. On a real Redis and a virtual clock, as test_traps.py."""

from __future__ import annotations

import asyncio
from typing import Any

from extensions.admission.admit import seen_key
from extensions.admission.patterns import number_of, split_url, url_patterns
from extensions.admission.records import AdmitItem, without_marks
from extensions.frontier.core import DownloadEvent, Frontier
from tests.unit.frontier import test_traps
from tests.unit.frontier.test_traps import HOST, IP, MakeFrontier

make = test_traps.make  # the fixture: frontiers on one Redis and one virtual clock

PAGES = f"http://{HOST}/page/"
FINE = url_patterns(f"{PAGES}1").fine


def numbered(url: str, sitemap: bool = False) -> AdmitItem:
    p = url_patterns(url)
    return AdmitItem(
        seen_key(url),
        IP,
        HOST,
        -1,
        f'{{"u":"{url}"}}',
        (p.fine, p.coarse, p.host_wide, p.path_key, ""),
        score=50.0,
        sitemap=sitemap,
        family=p.family,
        number=number_of(split_url(url)),
    )


async def crawl(frontier: Frontier, dead: set[str], dead_as: str = "soft_404") -> list[str]:
    """Lease and ack every queued URL, one at a time: `dead_as` for `dead`, else new."""
    fetched: list[str] = []
    clock = frontier.clock
    for _ in range(300):
        clock.now += 1.0  # type: ignore[attr-defined]
        reply = await frontier.lease(1)
        if not reply.leases:
            if reply.queued == 0:
                return fetched
            continue
        lease_id, record = reply.leases[0]
        url = without_marks(record)[6:-2]
        fetched.append(url)
        p = url_patterns(url)
        outcome = dead_as if url in dead else "new"
        done = DownloadEvent("done", lease_id, clock.now, 200)  # type: ignore[attr-defined]
        ack = DownloadEvent(
            "ack",
            lease_id,
            clock.now,  # type: ignore[attr-defined]
            host=HOST,
            outcome=outcome,
            patterns=(p.fine, p.coarse, p.host_wide, p.path_key, p.family),
            number=number_of(split_url(url)),
        )
        await frontier.report([done, ack])
    raise AssertionError("the queue never emptied")


async def admit(frontier: Frontier, numbers: range | list[int], **kw: Any) -> dict[str, Any]:
    reply = await frontier.admit([numbered(f"{PAGES}{n}", **kw) for n in numbers])
    return dict(reply.extra)


async def ends(frontier: Frontier) -> set[str]:
    members = await frontier.redis.smembers(frontier.keys.key("closed_patterns"))
    return {m.decode() for m in members if m.startswith(b"n|")}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_two_dead_numbers_past_the_last_page_end_the_sequence(make: MakeFrontier) -> None:
    async def go() -> None:
        frontier = make(probe_every=5)
        await admit(frontier, range(1, 31))
        await crawl(frontier, set())
        await admit(frontier, [40, 50])
        await crawl(frontier, {f"{PAGES}40", f"{PAGES}50"})
        assert await ends(frontier) == {f"n|40|{FINE}"}
        reply = await admit(frontier, range(60, 70))
        # Refused but one probe in probe_every (5); not marked seen: they may come back.
        assert (reply["admitted"], reply["refused"]) == (2, {"past_the_end": 8})
        below = await admit(frontier, [31, 35, 40])  # at or below the end: admitted
        assert below["admitted"] == 2 and below["duplicate"] == 1

    run(go())


def test_one_dead_number_does_not_end_it(make: MakeFrontier) -> None:
    async def go() -> dict[str, Any]:
        frontier = make()
        await admit(frontier, range(1, 11))
        await crawl(frontier, set())
        await admit(frontier, [40])
        await crawl(frontier, {f"{PAGES}40"})
        assert await ends(frontier) == set()
        return await admit(frontier, range(50, 55))

    assert run(go())["admitted"] == 5


def test_dead_numbers_before_any_live_one_end_nothing(make: MakeFrontier) -> None:
    async def go() -> dict[str, Any]:
        frontier = make()
        await admit(frontier, [3, 5, 7])
        await crawl(frontier, {f"{PAGES}3", f"{PAGES}5", f"{PAGES}7"})
        assert await ends(frontier) == set()
        return await admit(frontier, range(8, 12))

    # The pattern itself may close (all bad), but no sequence end refuses them.
    assert "past_the_end" not in run(go())["refused"]


def test_a_live_page_past_the_end_lifts_it(make: MakeFrontier) -> None:
    async def go() -> dict[str, Any]:
        frontier = make(probe_every=1)  # every URL past the end goes as a probe
        await admit(frontier, range(1, 11))
        await crawl(frontier, set())
        await admit(frontier, [20, 30])
        await crawl(frontier, {f"{PAGES}20", f"{PAGES}30"})
        assert await ends(frontier) == {f"n|20|{FINE}"}
        await admit(frontier, [25])  # a probe, and live: the sequence grew
        await crawl(frontier, set())
        assert await ends(frontier) == set()
        return await admit(frontier, range(40, 44))

    assert run(go())["admitted"] == 4


def test_a_sitemap_url_passes_the_end(make: MakeFrontier) -> None:
    async def go() -> dict[str, Any]:
        frontier = make(probe_every=50)
        await admit(frontier, range(1, 6))
        await crawl(frontier, set())
        await admit(frontier, [8, 9])
        await crawl(frontier, {f"{PAGES}8", f"{PAGES}9"})
        return await admit(frontier, [12, 13], sitemap=True)

    assert run(go())["admitted"] == 2


def test_off_when_end_after_is_zero(make: MakeFrontier) -> None:
    async def go() -> set[str]:
        frontier = make(end_after=0)
        await admit(frontier, range(1, 6))
        await crawl(frontier, set())
        await admit(frontier, [8, 9, 10])
        await crawl(frontier, {f"{PAGES}8", f"{PAGES}9", f"{PAGES}10"})
        return await ends(frontier)

    assert run(go()) == set()


def test_a_query_counter_ends_its_sequence_too(make: MakeFrontier) -> None:
    async def go() -> dict[str, Any]:
        frontier = make(probe_every=50)
        listing = f"http://{HOST}/blog/?page="
        fine = url_patterns(f"{listing}1").fine
        live = [numbered(f"{listing}{n}") for n in range(1, 9)]
        await frontier.admit(live)
        await crawl(frontier, set())
        await frontier.admit([numbered(f"{listing}{n}") for n in (12, 15)])
        await crawl(frontier, {f"{listing}12", f"{listing}15"})
        assert await ends(frontier) == {f"n|12|{fine}"}
        return dict((await frontier.admit([numbered(f"{listing}{n}") for n in (9, 20)])).extra)

    reply = run(go())
    assert (reply["admitted"], reply["refused"]) == (1, {"past_the_end": 1})


def test_a_duplicate_of_a_page_elsewhere_is_not_a_dead_number(make: MakeFrontier) -> None:
    async def go() -> set[str]:
        frontier = make()
        await admit(frontier, range(1, 6))
        await crawl(frontier, set())
        await admit(frontier, [8, 9])
        # Near copies of another pattern's page: real numbered pages can be.
        await crawl(frontier, {f"{PAGES}8", f"{PAGES}9"}, dead_as="duplicate")
        return await ends(frontier)

    assert run(go()) == set()
