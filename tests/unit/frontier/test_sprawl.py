"""Generator traps in the frontier's scripts (traps.lua `sprawled`, admit.lua's settled
pages), on a real Redis and a virtual clock: a pattern whose pages are all sprawl closes
at PRIORITY_TRAP_SPRAWL_AFTER, a real section whose first pages were sprawl does not,
fresh pages reopen a closed one, and the admit reply names the pages a marked link of
which was seen before."""

from __future__ import annotations

from collections.abc import Callable

from extensions.admission.patterns import url_patterns
from extensions.frontier.core import Frontier
from tests.unit.frontier.test_traps import HOST, MakeFrontier, fetch_all, item, make, run

__all__ = ["make"]  # the fixture, imported for pytest

GEN = f"http://{HOST}/gen/"


def slugs(start: int, n: int) -> list[str]:
    """Word slugs (/gen/bc-page): every URL its own shape, so they count under /gen/*
    and its family /gen/<W>."""
    return [GEN + word(k) + "-page" for k in range(start, start + n)]


def word(k: int) -> str:
    letters = ""
    while True:
        k, r = divmod(k, 26)
        letters += "abcdefghijklmnopqrstuvwxyz"[r]
        if not k:
            return letters


async def closed(frontier: Frontier, *fields: str) -> list[bool]:
    key = frontier.keys.key("closed_patterns")
    return [bool(await frontier.redis.sismember(key, field)) for field in fields]


FAMILY = "f|" + url_patterns(GEN + "a-b").family


async def sprawl_pages(
    frontier: Frontier, n: int, outcome: str | Callable[[str], str] = "sprawl"
) -> tuple[list[bool], dict[str, int]]:
    """Fetch n sprawl pages of /gen/; then whether it is closed, and what 4 more met."""
    await frontier.admit([item(url) for url in slugs(0, n)])
    await fetch_all(frontier, outcome)
    state = await closed(frontier, f"{HOST}/gen/*", FAMILY)
    later = await frontier.admit([item(url) for url in slugs(100, 4)])
    return state, dict(later.extra.get("refused") or {})


def test_sprawl_pages_before_the_sprawl_after_th_are_new_content(make: MakeFrontier) -> None:
    frontier = make(sprawl_after=6, min_pages=3, close_share=0.8)
    assert run(sprawl_pages(frontier, 5)) == ([False, False], {})


def test_a_pattern_of_sprawl_pages_closes_at_the_sprawl_after_th(make: MakeFrontier) -> None:
    frontier = make(sprawl_after=6, min_pages=3, close_share=0.8)
    assert run(sprawl_pages(frontier, 6)) == ([True, True], {"pattern_closed": 4})


def test_a_chain_s_page_closes_its_pattern_at_once(make: MakeFrontier) -> None:
    """Two sprawl pages, then one of a chain's third generation (admission/sprawl.py):
    closed as at the sprawl_after-th, 3 pages in, not 6."""
    frontier = make(sprawl_after=6, min_pages=3, close_share=0.8)
    outcomes = iter(["sprawl", "sprawl", "sprawl_chain"])
    assert run(sprawl_pages(frontier, 3, lambda url: next(outcomes))) == (
        [True, True],
        {"pattern_closed": 4},
    )


def test_a_chain_s_page_waits_for_min_pages(make: MakeFrontier) -> None:
    frontier = make(sprawl_after=6, min_pages=3, close_share=0.8)
    outcomes = iter(["sprawl", "sprawl_chain"])
    assert run(sprawl_pages(frontier, 2, lambda url: next(outcomes))) == ([False, False], {})


def test_off_when_sprawl_after_is_zero(make: MakeFrontier) -> None:
    async def go() -> list[bool]:
        frontier = make(sprawl_after=0, min_pages=3)
        await frontier.admit([item(url) for url in slugs(0, 12)])
        await fetch_all(frontier, "sprawl")
        return await closed(frontier, f"{HOST}/gen/*", FAMILY)

    assert run(go()) == [False, False]


def test_a_section_whose_first_pages_were_sprawl_stays_open(make: MakeFrontier) -> None:
    """A real section: its first pages list siblings nobody linked yet (sprawl), the
    others link back into it (new). Its sprawl pages are recounted, its share stays good."""

    async def go() -> list[bool]:
        frontier = make(sprawl_after=6, min_pages=3, close_share=0.8, demote_share=0.5)
        urls = slugs(0, 30)
        await frontier.admit([item(url) for url in urls])
        first = set(urls[:3] + urls[10:13] + urls[20:22])  # 8 sprawl pages of 30
        await fetch_all(frontier, lambda url: "sprawl" if url in first else "new")
        return await closed(frontier, f"{HOST}/gen/*", FAMILY)

    assert run(go()) == [False, False]


def test_fresh_pages_reopen_a_pattern_closed_by_sprawl(make: MakeFrontier) -> None:
    async def go() -> tuple[list[bool], list[bool]]:
        frontier = make(sprawl_after=4, min_pages=3, reopen_after=3, probe_every=2)
        await frontier.admit([item(url) for url in slugs(0, 4)])
        await fetch_all(frontier, "sprawl")
        shut = await closed(frontier, f"{HOST}/gen/*", FAMILY)
        # Probes (one in probe_every) turn out real pages: three in a row reopen it.
        await frontier.admit([item(url) for url in slugs(50, 6)])
        await fetch_all(frontier, "new")
        return shut, await closed(frontier, f"{HOST}/gen/*", FAMILY)

    shut, after = run(go())
    assert shut == [True, True]
    assert after == [False, False]


def test_the_admit_reply_names_pages_whose_marked_link_was_seen(make: MakeFrontier) -> None:
    async def go() -> tuple[list[str], list[str]]:
        frontier = make()
        await frontier.admit([item(GEN + "known")])
        marked = [
            item(GEN + "known")._replace(settles="lease-a"),  # linked before: settled
            item(GEN + "fresh-1")._replace(settles="lease-b"),
            item(GEN + "fresh-2")._replace(settles="lease-b"),
            item(GEN + "known")._replace(settles="lease-a"),  # named once
        ]
        reply = await frontier.admit(marked)
        again = await frontier.admit([item(GEN + "fresh-1")._replace(settles="lease-c")])
        return list(reply.extra.get("settled") or []), list(again.extra.get("settled") or [])

    assert run(go()) == (["lease-a"], ["lease-c"])


def test_the_admit_reply_counts_a_pages_marked_links_new_to_the_crawl(
    make: MakeFrontier,
) -> None:
    """A listing copy's items (frontier/settled_acks.py): per page, its marked links the
    script queued as new to the crawl; a seen one is no item of its own."""

    async def go() -> tuple[dict[str, int], dict[str, int]]:
        frontier = make()
        await frontier.admit([item(GEN + "known")])
        marked = [item(GEN + f"item-{n}")._replace(settles="lease-a") for n in range(3)]
        marked.append(item(GEN + "known")._replace(settles="lease-a"))
        marked.append(item(GEN + "item-9")._replace(settles="lease-b"))
        reply = await frontier.admit([*marked, item(GEN + "plain")])
        none = await frontier.admit([item(GEN + "plain-2")])
        return dict(reply.extra.get("fresh") or {}), dict(none.extra.get("fresh") or {})

    assert run(go()) == ({"lease-a": 3, "lease-b": 1}, {})


def test_sprawl_pages_spread_over_a_long_section_recount_little(make: MakeFrontier) -> None:
    """A real section of random links (every page links a few others at random): one page
    in eight has only new links of its shape. Eight of them over 64 pages recount as the
    weight of pages long past, not as eight recent bad pages: not even demoted."""

    async def go() -> str:
        frontier = make(sprawl_after=8, min_pages=3, demote_share=0.3, close_share=0.8)
        urls = slugs(0, 64)
        await frontier.admit([item(url) for url in urls])
        spread = set(urls[7::8])
        await fetch_all(frontier, lambda url: "sprawl" if url in spread else "new")
        raw = await frontier.redis.hget(frontier.keys.key("patterns"), FAMILY)
        return raw.decode()

    state = run(go()).split(",")
    assert state[4] == "0"  # open
    assert int(state[10]) == 8
