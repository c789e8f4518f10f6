"""Admission's output is pinned: canonical URL, score, patterns and record of a golden
sample (golden_admission.py), frozen before the admission path was made faster.

Records are compared by their fields (parse_record reads both the compact format and
the JSON the sample was frozen in), so the sample also shows that the compact format
keeps every field a JSON record had. The one intended difference: meta's
frontier_priority (it names the front queue at admission) is no longer stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from extensions.admission.records import RECRAWL_MARK, parse_record
from tests.unit.admission.golden_admission import golden

GOLDEN = Path(__file__).parent / "data" / "admission_golden.json"
RECORD = 4  # the record's place in AdmitItem.lua()


def fields(row: list[Any]) -> tuple[Any, ...]:
    url, metas, out = row
    if not isinstance(out, list):
        return (url, metas, out)  # a rejection reason
    record = out[RECORD]
    recrawl = record.startswith(RECRAWL_MARK)
    parsed = parse_record(record.removeprefix(RECRAWL_MARK))
    meta = parsed.pop("meta", {})
    meta.pop("frontier_priority", None)
    if meta:
        parsed["meta"] = meta
    decoded = (recrawl, sorted(parsed.items()))
    return (url, metas, json.dumps([*out[:RECORD], decoded, *out[RECORD + 1 :]]))


def test_admission_matches_the_golden_sample() -> None:
    expected = [fields(row) for row in json.loads(GOLDEN.read_text(encoding="utf-8"))]
    actual = [fields(json.loads(json.dumps(row))) for row in golden()]
    assert len(actual) == len(expected)
    changed = [(e, a) for e, a in zip(expected, actual, strict=True) if e != a]
    assert not changed, f"{len(changed)} cases changed, first: {changed[0]}"
