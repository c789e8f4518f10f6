"""CrawlSummary's distinct-host count: exact on a small crawl, bounded on a broad one."""

from __future__ import annotations

import sys

from extensions.observe import summary
from extensions.observe.summary import DistinctCount


def test_a_small_crawl_counts_its_hosts_exactly() -> None:
    hosts = DistinctCount()
    for i in range(3_000):
        hosts.add(f"h{i % 1_000}.test")
    assert len(hosts) == 1_000


def test_past_the_exact_cap_the_count_is_estimated_within_two_percent(monkeypatch) -> None:
    monkeypatch.setattr(summary, "EXACT_HOSTS", 1_000)
    hosts = DistinctCount()
    for n in (5_000, 200_000):  # linear counting's range, then the raw estimate's
        for i in range(n):
            hosts.add(f"www.site-{i}.example")  # repeats of the first 5,000 count once
        assert abs(len(hosts) - n) / n < 0.02
    # The memory no longer grows with the hosts: the exact set is gone.
    assert hosts.exact is None and sys.getsizeof(hosts.registers) < 20_000
