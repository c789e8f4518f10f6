"""Which duplicates teach a noise parameter (crawlproj/pipelines/noise_evidence.py): the
same main text under another URL does on its values; a near duplicate does when its URL
adds the parameter to a page that had none, on several pages; a category listing beside
another category, or one page's views alone, never does."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from crawlproj.pipelines.noise_evidence import (
    NOISE_MIN_RESEMBLANCE,
    NOISE_NEAR_PATHS,
    NOISE_NEAR_RESEMBLANCE,
    NoiseTeacher,
)
from extensions.admission.noise import NoiseConfig

COUNTS, LEARNED = "T:noise_counts", "T:noise_params"
CONFIG = NoiseConfig(after=2, views=True)


@pytest.fixture
def teacher(redis_client: Any) -> NoiseTeacher:
    return NoiseTeacher(redis_client, COUNTS, LEARNED, CONFIG, MemoryStatsCollector(get_crawler()))


def test_the_same_text_teaches_on_two_values(teacher: NoiseTeacher, redis_client: Any) -> None:
    page = "http://h.test/a"
    assert teacher.learn(f"{page}?visit=1", page, 1.0) == ()
    assert teacher.learn(f"{page}?visit=1", page, 1.0) == ()  # the same value again
    assert teacher.learn(f"{page}?visit=2", page, 1.0) == (("h.test", "visit"),)
    assert redis_client.smembers(LEARNED) == {b"h.test visit"}
    assert teacher.learn(f"{page}?visit=3", page, 1.0) == ()  # learned once


def test_a_category_beside_another_teaches_nothing(teacher: NoiseTeacher) -> None:
    """Near alike (a few products of its own beside shared prose), on its values alone."""
    shop = "http://h.test/shop/"
    for name in ("shirts", "bags", "hats"):
        assert teacher.learn(f"{shop}?category={name}", f"{shop}?category=shoes", 0.93) == ()
    assert teacher.stats.get_value("content/noise_evidence_view") is None


def test_views_of_several_pages_teach(teacher: NoiseTeacher, redis_client: Any) -> None:
    """A reply form is the page plus a line: views of NOISE_NEAR_PATHS pages teach."""
    alike = NOISE_NEAR_RESEMBLANCE
    assert teacher.learn("http://h.test/p/1?replytocom=11", "http://h.test/p/1", alike) == ()
    assert teacher.learn("http://h.test/p/1?replytocom=12", "http://h.test/p/1", alike) == ()
    assert NOISE_NEAR_PATHS == 2
    learned = teacher.learn("http://h.test/p/2?replytocom=21", "http://h.test/p/2", alike)
    assert learned == (("h.test", "replytocom"),)
    assert teacher.stats.get_value("content/noise_evidence_view") == 3


def test_one_value_on_several_pages_teaches_that_value(
    teacher: NoiseTeacher, redis_client: Any
) -> None:
    """A print view, a history tab: the value is learned, not its parameter."""
    alike = NOISE_NEAR_RESEMBLANCE
    assert teacher.learn("http://h.test/p/1?tab=overview", "http://h.test/p/1", alike) == ()
    assert teacher.learn("http://h.test/p/1?tab=overview", "http://h.test/p/1", alike) == ()
    learned = teacher.learn("http://h.test/p/2?tab=overview", "http://h.test/p/2", alike)
    assert learned == (("h.test", "tab=overview"),)
    assert redis_client.smembers(LEARNED) == {b"h.test tab=overview"}


def test_a_view_seen_exactly_teaches_as_a_view_too(teacher: NoiseTeacher) -> None:
    """A wiki's edit tab is the page (exact), its history tab the page and a list (near):
    two values of "action" on two pages teach the parameter."""
    wiki = "http://h.test/wiki"
    assert teacher.learn(f"{wiki}/A?action=edit", f"{wiki}/A", 1.0) == ()
    assert teacher.learn(f"{wiki}/A?action=history", f"{wiki}/A", 0.97) == ()
    assert teacher.learn(f"{wiki}/B?action=edit", f"{wiki}/B", 1.0) == (("h.test", "action"),)
    assert teacher.learn(f"{wiki}/C?action=history", f"{wiki}/C", 0.97) == ()  # learned


def test_one_page_s_views_teach_nothing(teacher: NoiseTeacher) -> None:
    for n in range(5):
        url = f"http://h.test/search?q=shoes&color=c{n}"
        assert teacher.learn(url, "http://h.test/search?q=shoes", 0.95) == ()


def test_a_view_too_far_teaches_nothing(teacher: NoiseTeacher) -> None:
    """An old revision is another text (0.14-0.70 alike on the test web's wiki)."""
    for n in range(4):
        url = f"http://h.test/w/{n}?oldid={n}"
        assert teacher.learn(url, f"http://h.test/w/{n}", NOISE_NEAR_RESEMBLANCE - 0.01) == ()
    assert teacher.stats.get_value("content/noise_evidence_too_far") == 4


def test_paging_and_sections_are_never_taught(teacher: NoiseTeacher) -> None:
    for n in range(4):
        for name in ("page", "lang"):
            url = f"http://h.test/d/{n}?{name}={n}"
            assert teacher.learn(url, f"http://h.test/d/{n}", NOISE_MIN_RESEMBLANCE) == ()
            assert teacher.learn(url, f"http://h.test/d/{n}", NOISE_NEAR_RESEMBLANCE) == ()


def test_learning_off(redis_client: Any) -> None:
    config = NoiseConfig(after=0, views=True)
    off = NoiseTeacher(redis_client, COUNTS, LEARNED, config, MemoryStatsCollector(get_crawler()))
    for n in range(4):
        assert off.learn(f"http://h.test/{n}?s={n}", f"http://h.test/{n}", 1.0) == ()


def test_views_off_only_the_same_text_teaches(redis_client: Any) -> None:
    stats = MemoryStatsCollector(get_crawler())
    config = NoiseConfig(after=2, views=False)
    teacher = NoiseTeacher(redis_client, COUNTS, LEARNED, config, stats)
    for n in range(4):
        url = f"http://h.test/p/{n}?replytocom={n}"
        assert teacher.learn(url, f"http://h.test/p/{n}", 0.95) == ()
    assert stats.get_value("content/noise_evidence_too_far") == 4
    assert teacher.learn("http://h.test/a?v=1", "http://h.test/a", 1.0) == ()
    assert teacher.learn("http://h.test/a?v=2", "http://h.test/a", 1.0) == (("h.test", "v"),)


def test_bars() -> None:
    """The same text is the same text; a view is closer than a listing beside another."""
    assert 0.95 < NOISE_MIN_RESEMBLANCE <= 1.0
    assert 0.85 <= NOISE_NEAR_RESEMBLANCE < NOISE_MIN_RESEMBLANCE
