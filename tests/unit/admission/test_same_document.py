"""A redirect to another spelling of its own URL (a session token in the path) is the
document its lease was for: admitted past URL-seen and fetched as the server spelled it."""

from __future__ import annotations

import pytest
from scrapy import Request

from extensions.admission.admit import SAME_DOCUMENT_HOPS, Rejected
from extensions.admission.records import parse_record
from tests.unit.admission.golden_admission import GoldenSpider, admission

SPIDER = GoldenSpider()


def redirected(url: str, *chain: str) -> Request:
    return Request(url, meta={"redirect_urls": list(chain), "depth": 1})


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("http://h.test/a.aspx", "http://h.test/(S(lit3py55t21z5v55vlm25s55))/a.aspx"),
        ("http://h.test/app/", "http://h.test/app/(X(1)S(x1y2))/"),
        ("http://h.test/cart", "http://h.test/cart;jsessionid=9F2C41D07A"),
        ("http://h.test/cart;jsessionid=9F2C41D07A", "http://h.test/cart"),
    ],
)
def test_a_redirect_to_its_own_urls_other_spelling_passes_url_seen(source, target) -> None:
    item = admission().item(redirected(target, source), SPIDER)
    assert item.seen_key == ""  # URL-seen has the canonical URL already: its source's
    assert parse_record(item.record)["u"] == target  # the canonical spelling redirects


def test_a_redirect_elsewhere_is_a_url_of_its_own() -> None:
    adm = admission()
    plain = adm.item(Request("http://h.test/b", meta={"depth": 1}), SPIDER)
    item = adm.item(redirected("http://h.test/b", "http://h.test/a"), SPIDER)
    assert item.seen_key == plain.seen_key != ""
    assert parse_record(item.record)["u"] == "http://h.test/b"


def test_a_server_that_redirects_every_spelling_ends_the_chain() -> None:
    adm = admission()
    chain = [f"http://h.test/(S(t{i}))/a" for i in range(SAME_DOCUMENT_HOPS)]
    ok = adm.item(redirected(chain[-1], "http://h.test/a", *chain[:-1]), SPIDER)
    assert ok.seen_key == ""
    with pytest.raises(Rejected) as caught:
        adm.item(redirected("http://h.test/(S(tz))/a", "http://h.test/a", *chain), SPIDER)
    assert caught.value.reason == "redirect_loop"
