"""Admission's output is pinned: canonical URL, score, patterns and record of a golden
sample (golden_admission.py), frozen before the admission path was made faster."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.admission.golden_admission import golden

GOLDEN = Path(__file__).parent / "data" / "admission_golden.json"


def test_admission_matches_the_golden_sample() -> None:
    expected = [tuple(row) for row in json.loads(GOLDEN.read_text(encoding="utf-8"))]
    actual = [tuple(json.loads(json.dumps(row))) for row in golden()]
    assert len(actual) == len(expected)
    changed = [(e, a) for e, a in zip(expected, actual, strict=True) if e != a]
    assert not changed, f"{len(changed)} cases changed, first: {changed[0]}"
