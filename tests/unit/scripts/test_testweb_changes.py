"""The test web's changing pages: seeded Poisson change times, new prose per version,
validators that follow the versions."""

from __future__ import annotations

from email.utils import parsedate_to_datetime

import pytest

from scripts.testweb.changes import ChangeClock
from scripts.testweb.sites import Site
from scripts.testweb.spec import HostSpec, WebSpec

EPOCH = 1_700_000_000.0


def test_change_times_are_a_seeded_poisson_process() -> None:
    clock = ChangeClock(7, "a.test", "/page/1", rate=0.5, epoch=EPOCH)
    again = ChangeClock(7, "a.test", "/page/1", rate=0.5, epoch=EPOCH)
    assert clock.version_at(EPOCH + 4000) == again.version_at(EPOCH + 4000)
    n = clock.version_at(EPOCH + 4000)
    assert n == pytest.approx(2000, rel=0.1)  # rate x time
    gaps = [b - a for a, b in zip(clock.times, clock.times[1:], strict=False)]
    assert sum(gaps) / len(gaps) == pytest.approx(2.0, rel=0.1)
    assert clock.changed_at(3) == clock.times[2] and clock.changed_at(0) == EPOCH
    assert clock.changes_between(EPOCH, EPOCH + 10) == [t for t in clock.times if t <= EPOCH + 10]
    assert ChangeClock(7, "a.test", "/page/1", rate=0.0, epoch=EPOCH).version_at(1e12) == 0


def test_a_changing_page_serves_new_prose_and_validators_per_version() -> None:
    host = HostSpec("c.test", pages=3, change_rates={"/page/1": 1.0})
    site = Site(WebSpec(hosts=[host], epoch=EPOCH), port=8000)
    clock = site.clocks[("c.test", "/page/1")]
    first, second = clock.changed_at(1), clock.changed_at(2)
    before = site.respond("c.test", "/page/1", at=(first + second) / 2)
    same = site.respond("c.test", "/page/1", at=second - 1e-6)
    after = site.respond("c.test", "/page/1", at=second + 1e-6)
    assert before.version == same.version == 1 and after.version == 2
    assert before.body == same.body and before.body != after.body
    assert before.headers["ETag"] != after.headers["ETag"]
    modified = parsedate_to_datetime(after.headers["Last-Modified"]).timestamp()
    assert modified == pytest.approx(second, abs=1.0)  # HTTP dates have whole seconds
    static = site.respond("c.test", "/page/2", at=second)
    assert static.version is None and "ETag" not in static.headers
