"""Session tokens stamped on a page's links are cut; context that selects pages stays
(crawlproj/page_tokens.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from crawlproj.page_tokens import PageTokenConfig, cut_page_tokens
from tests.project_settings import project_settings

CONFIG = PageTokenConfig(enabled=True, min_links=3, share=0.8, min_chars=8)


class Stats:
    def __init__(self) -> None:
        self.values: Counter[str] = Counter()

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] += count


PATHS = ["/", "/about", "/page/1", "/page/2", "/shop/?cat=3", "/news/item.php?id=7"]


def stamped(query: str, host: str = "http://h.test") -> list[str]:
    """Every link of a page with `query` appended (after any query of its own)."""
    return [f"{host}{p}{'&' if '?' in p else '?'}{query}" for p in PATHS]


def plain(host: str = "http://h.test") -> list[str]:
    return [f"{host}{p}" for p in PATHS]


@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("http://h.test/", "sid=9f2c41d07a5e"),  # minted on a seed fetched without one
        ("http://h.test/a?sid=9f2c41d07a5e", "sid=9f2c41d07a5e"),  # carried on (PHP trans_sid)
        ("http://h.test/", "PHPSESSID=b1946ac92492d2347c6235b4d2611184"),
        ("http://h.test/a?s=1cc814e17970", "s=338773663a5b"),  # a new token per render
        ("http://h.test/", "visit=1"),  # a counter from a page without one
        ("http://h.test/a?visit=3", "visit=4"),  # the counter's next render
        ("http://h.test/", "token=Zm9vYmFy-42_x"),  # URL-safe base64
    ],
)
def test_a_stamped_token_is_cut_from_every_same_host_link(page: str, query: str) -> None:
    stats = Stats()
    assert cut_page_tokens(page, stamped(query), CONFIG, stats) == plain()
    assert stats.values["crawlproj/links/page_token_pages"] == 1
    assert stats.values["crawlproj/links/page_token_cut"] == len(PATHS)


@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("http://h.test/fr/?lang=fr", "lang=fr"),  # the French section's own context
        ("http://h.test/", "lang=fr"),  # a word, wherever it comes from
        ("http://h.test/", "option=com_content&view=article"),  # a CMS routes on them
        ("http://h.test/a?version=3.2", "version=3.2"),
        ("http://h.test/a?year=2024", "year=2024"),  # the page's own number, carried on
        ("http://h.test/", "v=1.2.3"),  # digits and dots, no letters: not a token
        ("http://h.test/", "ref=nav42"),  # letters and digits, too short for a token
    ],
)
def test_context_that_selects_pages_stays(page: str, query: str) -> None:
    links = stamped(query)
    assert cut_page_tokens(page, links, CONFIG) == links


def test_a_value_that_differs_between_links_is_not_a_stamp() -> None:
    links = [f"http://h.test/shop/?color={c}&s=9f2c41d07a5e" for c in "abcdefgh"]
    links += [f"http://h.test/shop/?color=red&s=9f2c41d07a5e{i}" for i in range(2)]
    # color varies (a facet); the token is on all ten but with two other values: no stamp.
    assert cut_page_tokens("http://h.test/", links, CONFIG) == links


def test_the_share_and_the_minimum_count_bound_it() -> None:
    few = stamped("sid=9f2c41d07a5e")[:2]
    assert cut_page_tokens("http://h.test/", few, CONFIG) == few  # under min_links
    three = stamped("sid=9f2c41d07a5e")[:3]  # a first chapter: up, next, home
    assert cut_page_tokens("http://h.test/", three, CONFIG) == plain()[:3]
    mixed = stamped("sid=9f2c41d07a5e")[:4] + plain()[4:] + ["http://h.test/x", "http://h.test/y"]
    # 4 of 8 same-host links carry it: under the 0.8 share.
    assert cut_page_tokens("http://h.test/", mixed, CONFIG) == mixed
    most = [*stamped("sid=9f2c41d07a5e"), "http://h.test/x"]  # 6 of 7: a stamp
    assert cut_page_tokens("http://h.test/", most, CONFIG) == [*plain(), "http://h.test/x"]


def test_other_hosts_links_and_other_parameters_are_left_as_written() -> None:
    elsewhere = ["http://other.test/page?sid=9f2c41d07a5e"]
    links = [*stamped("sid=9f2c41d07a5e"), *elsewhere]
    cut = cut_page_tokens("http://h.test/", links, CONFIG)
    assert cut == [*plain(), *elsewhere]
    assert "http://h.test/shop/?cat=3" in cut and "http://h.test/news/item.php?id=7" in cut
    token_first = [f"http://h.test/p{i}?sid=9f2c41d07a5e&q=a+b%20c" for i in range(5)]
    assert cut_page_tokens("http://h.test/", token_first, CONFIG) == [
        f"http://h.test/p{i}?q=a+b%20c" for i in range(5)
    ]


def test_links_that_only_the_token_told_apart_are_one_link() -> None:
    links = [*stamped("sid=9f2c41d07a5e"), "http://h.test/about"]
    assert cut_page_tokens("http://h.test/", links, CONFIG) == plain()


def test_settings_are_validated_up_front() -> None:
    settings = project_settings()
    assert PageTokenConfig.from_settings(settings) == CONFIG
    settings.set("URL_STRIP_PAGE_TOKENS", False)
    assert PageTokenConfig.from_settings(settings) is None
    for name, bad in (("URL_PAGE_TOKEN_SHARE", 0.5), ("URL_PAGE_TOKEN_MIN_LINKS", 1)):
        wrong = project_settings()
        wrong.set(name, bad)
        with pytest.raises(ValueError, match=f"{name} must be"):
            PageTokenConfig.from_settings(wrong)
