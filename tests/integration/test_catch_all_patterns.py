"""A host's catch-all patterns (frontier/lua/traps.lua `learn`, records.CATCH_MARK), on
three hosts of a web dealt at random (dealt:35) with reply copies, redirect traps and
words of their own on every trap page: harbor.test's category pages are each a URL shape
of their own and link only new URLs of their own shape (their path filters), so each
read as a sprawl page, and the shop's catch-all pattern /shop/* closed after eight of
them. Every product queued by then was dropped at dispatch, a shape of its own or not:
96 of the 433 real pages in one crawl of three before the fix (its unit tests:
tests/unit/frontier/test_catch_all.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from scripts.testweb import WebSpec
from scripts.testweb.dealt import dealt
from tests.integration.test_crawl_budget import crawl_to_its_end

HOSTS = ("harbor.test", "acme.test", "indigo.test")


def three_hosts() -> WebSpec:
    web = dealt(35)
    hosts = [
        dataclasses.replace(
            h,
            alternates=["replytocom", "print", "share", "history"],
            redirect_traps=["tokens", "counter", "query", "bounce", "slug"],
        )
        for h in web.hosts
        if h.name in HOSTS
    ]
    return dataclasses.replace(web, hosts=hosts, trap_prose=80)


def test_a_shop_whose_catch_all_closes_keeps_its_products(tmp_path: Path) -> None:
    crawl_to_its_end(three_hosts(), tmp_path)  # asserts every real page was reached
