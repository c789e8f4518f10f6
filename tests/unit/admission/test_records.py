"""The compact request record: every field a Request needs comes back, a plain link
costs its URL plus a short header, and records queued as JSON before it still decode."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from scrapy import Request, Spider

from extensions.admission.prioritizer import SCORE_META
from extensions.admission.records import (
    CATCH_MARK,
    CATCH_META,
    FACET_CAP_META,
    FACET_MARK,
    PROBE_MARK,
    PROBE_META,
    RecordError,
    decode_request,
    encode_request,
    mark_recrawl,
    parse_record,
    record_text,
)


class RecordSpider(Spider):
    name = "records"

    def parse(self, response: object) -> None:
        return None

    def other(self, response: object) -> None:
        return None

    def failed(self, failure: object) -> None:
        return None


SPIDER = RecordSpider()


def round_trip(request: Request, **kwargs: object) -> Request:
    return decode_request(encode_request(request, SPIDER, **kwargs), SPIDER)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "url",
    [
        "https://www.example.test/docs/a-b-c-17.html",
        "http://example.test/",
        "http://[2001:db8::1]:8080/a?b=1",
        "ftp://example.test/a|b,c~d",  # no short scheme: the URL stays whole
        "https://h.test/caf%C3%A9?q=%7C|x&y=,",
    ],
)
def test_a_plain_link_keeps_its_url_depth_and_score(url: str) -> None:
    request = Request(url, meta={"depth": 4})
    back = round_trip(request, score=63.6)
    assert back.url == request.url
    assert back.meta == {"depth": 4, SCORE_META: 64}
    assert back.callback == SPIDER.parse and back.method == "GET" and back.priority == 0


def test_a_plain_link_costs_its_url_without_scheme_plus_a_short_header() -> None:
    url = "https://www.example.test/docs/install-guide-release-notes-1234.html"
    record = encode_request(Request(url, meta={"depth": 3}), SPIDER, score=100)
    assert record.endswith("|" + url.removeprefix("https://"))
    assert len(record) <= len(url) - len("https://") + 14


def test_the_rare_fields_survive_in_the_json_tail() -> None:
    request = Request(
        "http://h.test/form",
        callback=SPIDER.other,
        errback=SPIDER.failed,
        method="POST",
        body=b"\x00a=1",
        headers={"X-Token": "t"},
        priority=-2,
        dont_filter=True,
        meta={"depth": 1, "custom": ["x", 1], "frontier_priority": 0, "download_slot": "s"},
        cb_kwargs={"k": "\u00e9|,~"},
    )
    back = round_trip(request)
    assert (back.callback, back.errback) == (SPIDER.other, SPIDER.failed)
    assert (back.method, back.body, back.priority, back.dont_filter) == (
        "POST",
        b"\x00a=1",
        -2,
        True,
    )
    assert back.headers.getlist("X-Token") == [b"t"]
    assert back.cb_kwargs == {"k": "\u00e9|,~"}
    # frontier_priority named the front queue at admission; the slot is one attempt's.
    assert back.meta == {"depth": 1, "custom": ["x", 1]}


def test_the_entry_time_is_kept_to_the_second() -> None:
    with mock.patch("extensions.admission.records.time.time", return_value=1_796_159_328.7):
        record = encode_request(Request("https://h.test/"), SPIDER)
    assert parse_record(record)["t"] == 1_796_159_328


def test_marks_wrap_a_compact_record() -> None:
    record = encode_request(Request("https://h.test/p"), SPIDER, score=5)
    assert record_text(mark_recrawl(record, True)) == record
    back = decode_request(PROBE_MARK + record, SPIDER)
    assert back.url == "https://h.test/p" and back.meta[PROBE_META] is True
    back = decode_request(CATCH_MARK + record, SPIDER)
    assert back.url == "https://h.test/p" and back.meta[CATCH_META] is True
    assert PROBE_META not in back.meta
    back = decode_request(CATCH_MARK + FACET_MARK + record, SPIDER)
    assert back.url == "https://h.test/p" and back.meta[FACET_CAP_META] is True
    assert back.meta[CATCH_META] is True


def test_a_record_queued_as_json_before_the_compact_format_still_decodes() -> None:
    old = json.dumps({"u": "http://h.test/a", "t": 1_700_000_000, "s": 40, "d": 2, "cb": "other"})
    back = decode_request(old.encode(), SPIDER)
    assert back.url == "http://h.test/a" and back.callback == SPIDER.other
    assert back.meta == {"depth": 2, SCORE_META: 40}
    assert parse_record(old)["t"] == 1_700_000_000


def test_meta_that_is_not_json_is_refused_with_the_url() -> None:
    with pytest.raises(RecordError, match=r"http://h\.test/x"):
        encode_request(Request("http://h.test/x", meta={"obj": object()}), SPIDER)


def test_headers_and_cb_kwargs_added_after_the_request_was_built_are_kept() -> None:
    request = Request("https://h.test/late")
    request.headers["X-Late"] = "1"
    request.cb_kwargs["k"] = 2
    back = round_trip(request)
    assert back.headers.getlist("X-Late") == [b"1"] and back.cb_kwargs == {"k": 2}
