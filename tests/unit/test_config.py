"""Bad settings get one line naming the setting and what it must be."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

import crawlproj.settings
from extensions.config import check_types, require
from extensions.recrawl.state import RecrawlConfig


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("RECRAWL_INTERVAL", "abc", "RECRAWL_INTERVAL must be a number, not 'abc'"),
        ("RECRAWL_CONTINUOUS", "maybe", "RECRAWL_CONTINUOUS must be true or false"),
        ("FRONTIER_DELAY", "1s", "FRONTIER_DELAY must be a number"),
    ],
)
def test_unparsable_values_name_the_setting(name: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_types(Settings({name: value}), crawlproj.settings)


def test_valid_values_pass_including_floats_for_int_defaults() -> None:
    check_types(
        Settings({"FRONTIER_LEASE_TTL": "90.5", "RECRAWL_CONTINUOUS": "True"}),
        crawlproj.settings,
    )


def test_ranges_say_what_the_setting_must_be() -> None:
    require([("A", 1, True, "> 0")])
    with pytest.raises(ValueError, match=r"^RECRAWL_TICK must be > 0, not 0$"):
        RecrawlConfig(tick=0)
