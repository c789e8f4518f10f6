"""Sessions in paths: a link goes out with its path's session token (the tokenless
spelling would be redirected to a new session), and a redirect to another spelling of its
own URL is the document its lease was for: admitted past URL-seen, fetched as the server
spelled it. Either way the canonical URL stays the document's name."""

from __future__ import annotations

import pytest
from scrapy import Request

from extensions.admission.admit import SAME_DOCUMENT_HOPS, Rejected, seen_key
from extensions.admission.records import CANONICAL_META, parse_record
from extensions.frontier.scheduler import page_ack
from tests.unit.admission.golden_admission import GoldenSpider, admission

SPIDER = GoldenSpider()


def redirected(url: str, *chain: str) -> Request:
    return Request(url, meta={"redirect_urls": list(chain), "depth": 1})


@pytest.mark.parametrize(
    ("source", "target", "canonical"),
    [
        (
            "http://h.test/a.aspx",
            "http://h.test/(S(lit3py55t21z5v55vlm25s55))/a.aspx",
            "http://h.test/a.aspx",
        ),
        ("http://h.test/app/", "http://h.test/app/(X(1)S(x1y2))/", "http://h.test/app/"),
        ("http://h.test/cart", "http://h.test/cart;jsessionid=9F2C41D07A", "http://h.test/cart"),
        ("http://h.test/cart;jsessionid=9F2C41D07A", "http://h.test/cart", None),
    ],
)
def test_a_redirect_to_its_own_urls_other_spelling_passes_url_seen(
    source: str, target: str, canonical: str | None
) -> None:
    request = redirected(target, source)
    item = admission().item(request, SPIDER)
    assert item.seen_key == ""  # URL-seen has the canonical URL already: its source's
    assert parse_record(item.record)["u"] == target  # the canonical spelling redirects
    # The document's name where it goes out under another spelling (None: it does not).
    assert request.meta.get(CANONICAL_META) == canonical


@pytest.mark.parametrize(
    ("link", "canonical"),
    [
        ("http://h.test/a/(S(lit3py55t21z5v55vlm25s55))/b?y=2&x=1", "http://h.test/a/b?x=1&y=2"),
        ("http://h.test/cart;jsessionid=9F2C41D07A?utm_source=z", "http://h.test/cart"),
    ],
)
def test_a_link_goes_out_with_its_paths_session(link: str, canonical: str) -> None:
    request = Request(link, meta={"depth": 1})
    item = admission().item(request, SPIDER)
    assert item.seen_key == seen_key(canonical)  # one page, whatever its session
    sent = parse_record(item.record)["u"]
    assert canonical.partition("?")[0].rsplit("/", 1)[-1] in sent and "utm_source" not in sent
    assert "(S(" in sent or ";jsessionid=" in sent
    assert request.meta[CANONICAL_META] == canonical
    # Its ack's trap feedback goes to the canonical URL's patterns, not the session's.
    request.meta["frontier_outcome"] = "new"
    plain = Request(canonical, meta={"frontier_outcome": "new"})
    assert page_ack(request, "L", 0.0).patterns == page_ack(plain, "L", 0.0).patterns


def test_parentheses_that_are_not_a_session_change_nothing() -> None:
    request = Request("http://h.test/w/Set_(maths)", meta={"depth": 1})
    item = admission().item(request, SPIDER)
    assert parse_record(item.record)["u"] == "http://h.test/w/Set_(maths)"
    assert CANONICAL_META not in request.meta


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
