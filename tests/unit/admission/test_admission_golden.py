"""Admission's output is pinned: canonical URL, score, patterns and record of a golden
sample (golden_admission.py), frozen before the admission path was made faster.

Records are compared by their fields (parse_record reads both the compact format and
the JSON the sample was frozen in), so the sample also shows that the compact format
keeps every field a JSON record had. The intended differences: meta's
frontier_priority (it names the front queue at admission) is no longer stored, and a URL
with a session in its path (`;jsessionid=`) goes out with it: its record's URL is the
linked spelling, the canonical one (the sample's) in meta's frontier_canonical."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from extensions.admission.records import CANONICAL_META, RECRAWL_MARK, parse_record
from tests.unit.admission.golden_admission import golden

GOLDEN = Path(__file__).parent / "data" / "admission_golden.json"
RECORD = 4  # the record's place in AdmitItem.lua()
SEED = 14  # the seed flag's: added after the sample was frozen (test below)


def fields(row: list[Any]) -> tuple[Any, ...]:
    url, metas, out = row
    if not isinstance(out, list):
        return (url, metas, out)  # a rejection reason
    record = out[RECORD]
    recrawl = record.startswith(RECRAWL_MARK)
    parsed = parse_record(record.removeprefix(RECRAWL_MARK))
    meta = parsed.pop("meta", {})
    meta.pop("frontier_priority", None)
    if CANONICAL_META in meta:
        parsed["u"] = meta.pop(CANONICAL_META)
    if meta:
        parsed["meta"] = meta
    decoded = (recrawl, sorted(parsed.items()))
    return (url, metas, json.dumps([*out[:RECORD], decoded, *out[RECORD + 1 : SEED]]))


def test_admission_matches_the_golden_sample() -> None:
    expected = [fields(row) for row in json.loads(GOLDEN.read_text(encoding="utf-8"))]
    actual = [fields(json.loads(json.dumps(row))) for row in golden()]
    assert len(actual) == len(expected)
    changed = [(e, a) for e, a in zip(expected, actual, strict=True) if e != a]
    assert not changed, f"{len(changed)} cases changed, first: {changed[0]}"


def test_the_seed_flag_marks_requests_without_depth_or_source() -> None:
    # The sample's metas (their keys): {} is a seed's, every other one has a depth.
    rows = [row for row in golden() if isinstance(row[2], list)]
    assert {out[SEED] for _, metas, out in rows if metas == "[]"} == {1}
    assert {out[SEED] for _, metas, out in rows if metas != "[]"} == {0}
