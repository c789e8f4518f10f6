"""A re-fetch whose body is the stored copy's is unchanged without its text extracted
again; any other body is extracted and compared as before."""

from __future__ import annotations

import pytest
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

import crawlproj.pipelines.signature as signature_module
from crawlproj.pipelines.content import ContentDedupPipeline
from crawlproj.pipelines.signature import content_signature
from extensions.recrawl.state import DocState
from tests.project_settings import project_values

URL = "http://h.test/page"
BODY = b"<html><body><main><p>" + b"A page of real words about crawling. " * 20 + b"</p></main>"


def _stored(body: bytes) -> DocState:
    sig = content_signature(HtmlResponse(URL, body=body), "text/html")
    assert sig.content_hash and sig.text.text_hash and sig.text.simhash is not None
    simhash = f"{sig.text.simhash:016x}"
    return DocState(
        "fp", URL, 1.0, content_hash=sig.content_hash, text_hash=sig.text.text_hash, simhash=simhash
    )


def test_the_stored_body_again_is_unchanged_and_not_extracted(monkeypatch) -> None:
    pipeline = ContentDedupPipeline.from_crawler(get_crawler(settings_dict=project_values()))
    prev = _stored(BODY)

    def no_extraction(html: object) -> None:
        raise AssertionError("the stored copy's text was extracted again")

    monkeypatch.setattr(signature_module, "page_text", no_extraction)
    sig, verdict = pipeline._classify(HtmlResponse(URL, body=BODY), "text/html", URL, prev)
    assert verdict.branch == "unchanged" and verdict.distance == 0
    assert sig.text_source == "stored" and sig.content_hash == prev.content_hash
    assert sig.text.text_hash == prev.text_hash
    assert sig.text.simhash == int(prev.simhash, 16)
    # Another body is extracted (here: refused, so the test sees that it was asked for).
    with pytest.raises(AssertionError, match="extracted again"):
        pipeline._classify(HtmlResponse(URL, body=BODY + b"<p>new</p>"), "text/html", URL, prev)


def test_a_new_body_with_the_stored_main_text_is_still_unchanged() -> None:
    pipeline = ContentDedupPipeline.from_crawler(get_crawler(settings_dict=project_values()))
    prev = _stored(BODY)
    footer = BODY.replace(b"</main>", b"</main><footer>Visited 12 times</footer>")
    sig, verdict = pipeline._classify(HtmlResponse(URL, body=footer), "text/html", URL, prev)
    assert verdict.branch == "unchanged" and sig.text_source == "main"
    assert sig.content_hash != prev.content_hash and sig.text.text_hash == prev.text_hash
