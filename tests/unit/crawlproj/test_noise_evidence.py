"""Which duplicates teach a noise parameter (crawlproj/pipelines/content.py): the same
main text under another URL does; a near duplicate further off (a category listing with
a few products of its own beside shared prose) does not, and is counted."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from crawlproj.pipelines.content import NOISE_MIN_RESEMBLANCE, ContentDedupPipeline, Verdict
from tests.project_settings import project_values

URL = "http://h.test/shop/?category=shirts"
ORIGINAL = "http://h.test/shop/?category=shoes"
BODY = b"<html><body><main><p>" + b"A listing of the shop's products. " * 20 + b"</p></main>"


@pytest.mark.parametrize(("resemblance", "teaches"), [(1.0, True), (0.99, True), (0.93, False)])
def test_only_the_same_text_teaches_noise(monkeypatch, resemblance: float, teaches: bool) -> None:
    pipeline = ContentDedupPipeline.from_crawler(get_crawler(settings_dict=project_values()))
    pipeline.stats = MemoryStatsCollector(get_crawler())
    asked: list[tuple[str, str]] = []

    def dedup(*args: Any) -> Verdict:
        return Verdict("near_duplicate", ORIGINAL, 2, resemblance)

    def learn(url: str, original: str) -> tuple[tuple[str, str], ...]:
        asked.append((url, original))
        return (("h.test", "category"),)

    monkeypatch.setattr(pipeline, "_dedup", dedup)
    monkeypatch.setattr(pipeline, "_learn_noise", learn)
    response = HtmlResponse(URL, body=BODY, request=Request(URL))
    _, verdict = pipeline._classify(response, "text/html", URL, None)
    assert bool(asked) is teaches
    assert bool(verdict.noise) is teaches
    assert (pipeline.stats.get_value("content/noise_evidence_too_far") == 1) is not teaches


def test_the_bar_is_the_same_text() -> None:
    assert 0.95 < NOISE_MIN_RESEMBLANCE <= 1.0
