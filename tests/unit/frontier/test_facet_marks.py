"""The filters a facet cap let through are marked in their records (records.FACET_MARK,
admit.lua), and dispatch drops a filter in the path that was queued before this worker
saw its base's sidebar unless it is marked (Admission.unproven_filter): a category's first
level of filters is linked from a page that shows no filter yet."""

from __future__ import annotations

from scrapy import Request

from extensions.admission.facet_sidebar import FACET_META
from extensions.admission.records import CATCH_MARK, FACET_MARK
from tests.unit.admission.golden_admission import GoldenSpider, admission
from tests.unit.frontier.test_traps import HOST, IP, MakeFrontier, item, make, run

__all__ = ["make"]  # the fixture, imported for pytest


def test_the_admit_script_marks_what_it_counts_against_a_facet_cap(make: MakeFrontier) -> None:
    async def go() -> tuple[list[bool], dict[str, int]]:
        frontier = make(facet_max=2)
        filters = [f"http://{HOST}/shop/?color={c}" for c in ("red", "blue", "green")]
        reply = await frontier.admit([item(u, facet=True) for u in filters])
        await frontier.admit([item(f"http://{HOST}/about/team")])
        keys = [frontier.keys.back_queue(IP, lane) for lane in range(10)]
        records = [r.decode() for key in keys for r in await frontier.redis.lrange(key, 0, -1)]
        # The first is charged to a catch-all too (its shape seen once): C| then F|.
        marks = [r.removeprefix(CATCH_MARK).startswith(FACET_MARK) for r in records]
        return marks, dict(reply.extra.get("refused") or {})

    marks, refused = run(go())
    assert sorted(marks) == [False, True, True] and refused == {"facet_cap": 1}


def test_a_path_filter_queued_before_its_sidebar_was_seen_is_dropped() -> None:
    adm, spider = admission(), GoldenSpider()
    base = "http://shop.test/shop/shoes/f/"
    queued = [base + p for p in ("fit-s/", "maker-acme/", "tone-red/", "pg-2/")]
    for url in queued:
        adm.item(Request(url), spider)  # from the category page: no sidebar seen yet
    assert not any(adm.unproven_filter(url) for url in queued)
    # tone-red's page shows the sidebar: its refinements add fit, maker.
    for path, name in (("tone-red/fit-m/", "fit"), ("maker-nova/tone-red/", "maker")):
        adm.item(Request(base + path, meta={FACET_META: name}), spider)
    dropped = [url.removeprefix(base) for url in queued if adm.unproven_filter(url)]
    assert dropped == ["fit-s/", "maker-acme/"]  # tone is not known yet, pg-2 a number
    assert not adm.unproven_filter("http://shop.test/shop/shoes/nova-boot")
    assert not adm.unproven_filter("http://shop.test/shop/bags/f/fit-s/")  # another base
