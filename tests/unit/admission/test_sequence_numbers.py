"""A URL's number in its pattern (patterns.number_of) and how workers hold the ends of
numbered sequences that trap feedback publishes (blocklist.split_closed, Admission.closed):
the worker half of traps.lua's past-the-end refusal (tests/unit/frontier/test_sequence_end)."""

from __future__ import annotations

import logging

import pytest

from extensions.admission.admit import Admission
from extensions.admission.blocklist import BlocklistRefresh, split_closed
from extensions.admission.budgets import pattern_state
from extensions.admission.patterns import number_of, split_url, url_patterns
from tests.unit.admission.golden_admission import admission


@pytest.mark.parametrize(
    ("url", "number"),
    [
        ("http://h.test/page/7", 7),
        ("http://h.test/blog/p12.html", 12),
        ("http://h.test/2024/05/post-3", -1),  # several numbers: no single counter
        ("http://h.test/notes/1.4.10", -1),
        ("http://h.test/list?page=4", 4),
        ("http://h.test/list?page=4&sort=new", 4),
        ("http://h.test/list?page=4&per=20", -1),  # two numbers: which one counts is unknown
        ("http://h.test/page/9?page=4", 9),  # the path's number first
        ("http://h.test/about", -1),
        ("http://h.test/", -1),
        ("http://h.test/s/3f2a9c0e4b5d6a7f8e9d/view", -1),  # digits of a hex token
        ("http://h.test/item/1234567890123456", -1),  # past 15 digits: a token
        ("http://h.test/list?page=%D9%A3", -1),  # not ASCII digits
    ],
)
def test_a_urls_number_is_its_one_path_counter_or_its_only_numeric_value(
    url: str, number: int
) -> None:
    assert number_of(split_url(url)) == number


def test_closed_members_split_into_patterns_and_sequence_ends() -> None:
    closed, ends = split_closed(
        ["h.test/cal/<N>", "f|h.test/<W>", "n|40|h.test/page/<N>", "n|x|bad", "n|5|"]
    )
    assert closed == {"h.test/cal/<N>", "f|h.test/<W>"}
    assert ends == {"h.test/page/<N>": 40}  # malformed members are ignored


def test_a_queued_url_past_its_sequences_end_is_refused_unless_listed() -> None:
    adm = admission()
    adm.ceilings = {url_patterns("http://h.test/page/1").fine: 40}
    assert adm.closed("http://h.test/page/40") is None
    assert adm.closed("http://h.test/page/41") == "past_the_end"
    assert adm.closed("http://h.test/page/41", listed=True) is None  # a sitemap lists it
    assert adm.closed("http://h.test/other/99") is None
    adm.closed_patterns = frozenset({url_patterns("http://h.test/page/1").fine})
    assert adm.closed("http://h.test/page/3") == "pattern_closed"


def refresh_of(adm: Admission) -> BlocklistRefresh:
    return BlocklistRefresh(
        redis=None,  # type: ignore[arg-type]  # patterns_changed reads no Redis
        key="",
        admission=adm,
        stats=None,  # type: ignore[arg-type]
        clock=lambda: 0.0,
        refresh_s=5.0,
        closed_keys=[],
        noise_key="",
    )


def test_a_reply_sets_moves_and_lifts_a_sequence_end_before_the_next_read() -> None:
    adm = admission()
    refresh = refresh_of(adm)
    fine = url_patterns("http://h.test/page/1").fine
    refresh.patterns_changed([f"n|50|{fine}", "f|h.test/<W>"], None)
    assert (adm.ceilings, adm.closed_patterns) == ({fine: 50}, {"f|h.test/<W>"})
    refresh.patterns_changed([f"n|45|{fine}"], [f"n|50|{fine}"])  # a lower dead number
    assert adm.ceilings == {fine: 45}
    refresh.patterns_changed(None, [f"n|45|{fine}"])  # a live page past it: lifted
    assert adm.ceilings == {}
    assert adm.closed("http://h.test/page/99") is None


def test_the_worker_whose_report_closed_a_pattern_logs_it_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    adm = admission()
    refresh = refresh_of(adm)
    fine = url_patterns("http://h.test/page/1").fine
    with caplog.at_level(logging.INFO, logger="extensions.admission.blocklist"):
        refresh.patterns_changed(["f|h.test/wiki/<W>", f"n|50|{fine}"], None)
        refresh.patterns_changed(["f|h.test/wiki/<W>"], None)  # closed already: no line
        refresh.patterns_changed(None, ["f|h.test/wiki/<W>"])
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert lines[0].startswith("Trap feedback closed URL pattern f|h.test/wiki/<W>:")
    assert lines[1] == f"Numbered sequence {fine} ends at 50: larger numbers are refused"
    assert lines[2].startswith("Trap feedback reopened URL pattern f|h.test/wiki/<W>")


def test_operators_read_a_patterns_sequence_end_from_its_record() -> None:
    # admitted, n, bad, fresh, state, probes, outcomes, highest live, lowest dead, dead
    shown = pattern_state("44,17.680,1.950,0,0,0,42,40,50,2")
    assert shown["sequence"] == {"highest_live": 40, "lowest_dead": 50, "dead": 2}
    assert "sequence" not in pattern_state("3")  # a record never numbered says nothing
