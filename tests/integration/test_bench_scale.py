"""bench/bench_scale.py at a toy size, so the script cannot rot between the hand runs
whose tables bench/README.md publishes: its streamed admission items still equal
Admission.item's, the cumulative sizes add up, and every column is measured."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def number(text: str) -> float:
    return float(text.replace(",", ""))


def test_bench_scale_runs_end_to_end_at_a_toy_size() -> None:
    args = ["--sizes", "3000,9000", "--ips", "300", "--lease-sample", "1000"]
    args += ["--held-out", "5000", "--ref-urls", "500"]
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_scale.py"), *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, result.stderr[-3000:]
    assert "500/500 sampled links identical to Admission.item's" in out
    assert "SEEN_CAPACITY = 9,090" in out
    table = out[out.index("\nURLs admitted") + 1 :]
    rows = {cells(line)[0]: cells(line) for line in table.splitlines()[2:5]}
    first, last = rows["3,000"], rows["9,000"]
    # Queued at 9,000 = admitted minus the 1,000 the first size leased (and acked), less
    # at most a few Bloom false positives refused at admission.
    assert number(first[1]) == 3000
    assert 7990 <= number(last[1]) <= 8000
    for row in (first, last):
        bytes_per_url, admit_per_s, lease_per_s = (number(row[i]) for i in (2, 3, 5))
        assert 50 < bytes_per_url < 5000 and admit_per_s > 0 and lease_per_s > 0
        p50, p99 = number(row[6]), number(row[7])
        assert 0 < p50 <= p99
        assert number(row[9]) < 0.01  # measured false-positive rate of 5,000 probes
    assert rows["scrapy-redis 500"][1] == "500"
    assert "cost ratios to the 3,000 row" in out
