"""URL-seen Bloom filter: sizing, measured false-positive rates, generations, modes, locking."""

from __future__ import annotations

import logging
import math
import multiprocessing
import random
import tempfile
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extensions.admission.seen import (
    SeenConfig,
    UrlSeen,
    allocated_fp_rate,
    theoretical_fp_rate,
)
from tests.project_settings import project_settings


class Stats:
    """The StatsCollector calls UrlSeen makes, kept in a dict."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = self.values.get(key, start) + count

    def set_value(self, key: str, value: Any) -> None:
        self.values[key] = value


def random_keys(rng: random.Random, n: int) -> list[str]:
    """n seen keys shaped like the frontier's: 16 hex chars of a uniform 64-bit hash."""
    blob = rng.randbytes(8 * n).hex()
    return [blob[i : i + 16] for i in range(0, 16 * n, 16)]


@contextmanager
def seeded_hashes(seed: int) -> Iterator[None]:
    """pybloomfiltermmap3 draws its hash seeds from the global `random`: pin them, so each
    measurement is one reproducible draw rather than a new one per run."""
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


def make(data_dir: Path, stats: Stats | None = None, **values: Any) -> UrlSeen:
    settings = project_settings({f"SEEN_{k.upper()}": v for k, v in values.items()})
    return UrlSeen.from_settings(settings, data_dir, stats)


# -- sizing ----------------------------------------------------------------------------


def test_theoretical_rate_is_the_optimum_for_bits_per_key() -> None:
    assert theoretical_fp_rate(20) == pytest.approx(6.7118e-5, rel=1e-4)
    assert theoretical_fp_rate(10) == pytest.approx(8.1925e-3, rel=1e-4)
    # The optimum is 0.5^k with k = bits * ln2.
    assert theoretical_fp_rate(20) == pytest.approx(0.5 ** (20 * math.log(2)))


@pytest.mark.parametrize("bits", [10, 20])
def test_allocation_matches_bits_per_key(data_dir: Path, bits: int) -> None:
    with make(data_dir, bits_per_key=bits, capacity=1_000_000) as seen:
        bloom = seen._generations[0].bloom
        # The library rounds k down and m up to whole hashes and bytes.
        assert bloom.num_hashes == math.floor(bits * math.log(2))
        assert 0 <= bloom.num_bits - 1_000_000 * bits <= bloom.num_hashes + 7
        assert allocated_fp_rate(bloom) == pytest.approx(theoretical_fp_rate(bits), rel=0.04)


# -- measured false-positive rate ------------------------------------------------------

# (bits, keys, probes): probes x p gives ~1600 and ~340 expected false positives, so the
# 20% band is 8 and 3.7 standard deviations wide.
FP_CASES = [(10, 100_000, 200_000), (20, 200_000, 5_000_000)]


@pytest.mark.parametrize(("bits", "keys", "probes"), FP_CASES)
def test_measured_fp_rate_within_20_percent_of_theory(
    data_dir: Path, bits: int, keys: int, probes: int
) -> None:
    rng = random.Random(bits)
    stats = Stats()
    with seeded_hashes(bits), make(data_dir, stats, bits_per_key=bits, capacity=keys,
                                   exact=False) as seen:  # fmt: skip
        seen.record(random_keys(rng, keys - 1))  # one short: stay in generation 1
        assert seen.generations == 1
        false_positives = 0
        for start in range(0, probes, 100_000):  # absent keys: every local drop is a FP
            _send, dropped = seen.split(random_keys(rng, min(100_000, probes - start)))
            false_positives += len(dropped)
        allocated = allocated_fp_rate(seen._generations[0].bloom)
    measured = false_positives / probes
    print(f"\nbits/key={bits}: measured {measured:.3e} ({false_positives}/{probes}), "
          f"theory {theoretical_fp_rate(bits):.3e}, as allocated {allocated:.3e}")  # fmt: skip
    assert measured == pytest.approx(theoretical_fp_rate(bits), rel=0.2)
    assert measured == pytest.approx(allocated, rel=0.2)
    assert stats.values["seen/bloom/hit"] == stats.values["seen/dropped_local"] == false_positives
    assert stats.values["seen/bloom/miss"] == probes - false_positives


# -- capacity, generations, reopen -----------------------------------------------------


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_capacity_warnings_then_new_generation(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="extensions.admission.seen")
    rng = random.Random(1)
    stats = Stats()
    first = random_keys(rng, 1000)
    with make(data_dir, stats, capacity=1000, exact=False) as seen:
        seen.record(first[:790])
        assert warnings_of(caplog) == []
        seen.record(first[790:810])
        assert len(warnings_of(caplog)) == 1
        assert "generation 1 at 80%" in warnings_of(caplog)[0]
        assert stats.values["seen/bloom/fill_80"] == 1
        assert "seen/bloom/full" not in stats.values
        seen.record(first[810:])
        assert len(warnings_of(caplog)) == 2
        assert "generation 1 is full" in warnings_of(caplog)[1]
        assert stats.values["seen/bloom/full"] == 1
        assert stats.values["seen/bloom/generations"] == seen.generations == 2
        assert seen.fill_ratio() == 0.0
        assert (data_dir / "seen" / "w0.g002.bloom").exists()
        second = seen._generations[1].bloom
        assert second.capacity == 2000  # SEEN_GROWTH = 2
        assert second.num_hashes == 14  # p halved: one more hash
        # Generation 1 is still checked, and no longer written.
        assert seen.split(first) == ([], list(range(1000)))
        assert seen._generations[0].bloom.read_only
        seen.record(random_keys(rng, 1700))  # 85% of generation 2: its own warning, once
        assert [m for m in warnings_of(caplog)[2:]] == [
            "URL-seen w0: Bloom generation 2 at 80% of its 2000 keys; a new one starts at "
            "100% (raise SEEN_CAPACITY to avoid it)"
        ]
        assert stats.values["seen/bloom/fill_80"] == 2
        assert stats.values["seen/bloom/fill_ratio"] == pytest.approx(0.85, abs=0.01)


def test_reopen_keeps_generations_and_approx_len(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = random_keys(random.Random(2), 2500)
    with make(data_dir, capacity=2000, growth=1) as seen:
        seen.record(keys)
        # A key whose insertion was a Bloom false positive (~7e-5 each at 20 bits/key,
        # hashes seeded per filter) is not counted: 2500 x 7e-5 = 0.17 expected misses.
        assert 2500 - 3 <= seen.approx_len() <= 2500
        assert seen.generations == 2
    caplog.clear()
    with make(data_dir, capacity=2000, growth=1, exact=False) as again:
        assert again.worker_id == "w0"
        assert again.generations == 2
        assert again.approx_len() == pytest.approx(2500, rel=0.03)
        assert again.fill_ratio() == pytest.approx(500 / 2000, rel=0.05)
        assert again.split(keys) == ([], list(range(2500)))
        assert warnings_of(caplog) == []  # generation 2 is at 25%: nothing to say


def test_reopen_past_80_percent_warns_again(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with make(data_dir, capacity=1000) as seen:
        seen.record(random_keys(random.Random(3), 900))
    caplog.clear()
    stats = Stats()
    with make(data_dir, stats, capacity=1000):
        assert len(warnings_of(caplog)) == 1
        assert stats.values["seen/bloom/fill_80"] == 1


def test_corrupt_generation_file_is_dropped_not_fatal(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (data_dir / "seen").mkdir()
    (data_dir / "seen" / "w0.g001.bloom").write_bytes(b"not a bloom filter")
    with make(data_dir, capacity=100) as seen:
        assert seen.generations == 1
        assert seen.approx_len() == 0
        assert any("unreadable" in m for m in warnings_of(caplog))


# -- exact and memory-saving modes -----------------------------------------------------


def bloom_false_positives(seen: UrlSeen, rng: random.Random, wanted: int) -> list[str]:
    """Fresh keys the (deliberately tiny) Bloom calls 'maybe seen'."""
    found: list[str] = []
    while len(found) < wanted:
        found += [k for k in random_keys(rng, 100) if seen._membership()(k)]
    return found[:wanted]


def test_exact_sends_bloom_false_positives_and_drops_only_confirmed(data_dir: Path) -> None:
    rng = random.Random(4)
    stats = Stats()
    with make(data_dir, stats, bits_per_key=2, capacity=100, local_cache=3, exact=True) as seen:
        recorded = random_keys(rng, 5)
        seen.record(recorded)
        fps = bloom_false_positives(seen, rng, 10)
        send, drop = seen.split(fps + recorded)
        assert send == list(range(12))  # the FPs, and the 2 keys the LRU has evicted
        assert drop == [12, 13, 14]  # the last 3 recorded
        assert stats.values["seen/bloom/hit_sent"] == 10 + 2
        assert stats.values["seen/local_hit"] == stats.values["seen/dropped_local"] == 3


def test_memory_saving_mode_drops_bloom_hits(data_dir: Path) -> None:
    rng = random.Random(5)
    stats = Stats()
    with make(data_dir, stats, bits_per_key=2, capacity=100, exact=False) as seen:
        seen.record(random_keys(rng, 5))
        fps = bloom_false_positives(seen, rng, 10)
        assert seen.split(fps) == ([], list(range(10)))  # the documented loss
        assert stats.values["seen/dropped_local"] == stats.values["seen/bloom/hit"] == 10
        assert "seen/bloom/hit_sent" not in stats.values


def test_dont_filter_keys_are_always_sent_never_recorded(data_dir: Path) -> None:
    stats = Stats()
    with make(data_dir, stats, exact=False) as seen:
        seen.record(["", "00000000000000aa"])
        assert seen.split(["", "00000000000000aa", ""]) == ([0, 2], [1])
        assert stats.values["seen/unfiltered"] == 2
        assert stats.values["seen/recorded"] == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(st.tuples(st.booleans(), st.lists(st.integers(0, 60), max_size=12)), max_size=40),
    cache=st.integers(0, 8),
)
def test_exact_mode_drops_exactly_what_this_process_confirmed(
    ops: list[tuple[bool, list[int]]], cache: int
) -> None:
    # A tiny Bloom (2 bits/key, capacity 20: many FPs and generations) against a model LRU.
    keys = [f"{i:016x}" for i in range(61)]
    model: OrderedDict[str, None] = OrderedDict()
    with (
        tempfile.TemporaryDirectory() as tmp,
        make(Path(tmp), bits_per_key=2, capacity=20, local_cache=cache, exact=True) as seen,
    ):
        for is_record, picks in ops:
            batch = [keys[i] for i in picks]
            if is_record:
                seen.record(batch)
                for key in batch:
                    model[key] = None
                    model.move_to_end(key)
                    while len(model) > cache:
                        model.popitem(last=False)
                continue
            send, drop = seen.split(batch)
            assert sorted(send + drop) == list(range(len(batch)))
            for i in drop:
                assert batch[i] in model  # never a key Redis has not confirmed to us
                model.move_to_end(batch[i])
            assert all(batch[i] not in model for i in send)  # and nothing confirmed is sent


# -- settings and worker ids -----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SEEN_BITS_PER_KEY", 1),
        ("SEEN_BITS_PER_KEY", "many"),
        ("SEEN_CAPACITY", 0),
        ("SEEN_CAPACITY", "1e9x"),
        ("SEEN_GROWTH", 3),
        ("SEEN_LOCAL_CACHE", -1),
        ("SEEN_EXACT", "maybe"),
        ("SEEN_WORKER_ID", "../w0"),
        ("SEEN_WORKER_ID", ".hidden"),
    ],
)
def test_invalid_setting_names_the_setting(data_dir: Path, name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name):
        UrlSeen.from_settings(project_settings({name: value}), data_dir)


def test_a_worker_id_override_is_checked_like_the_setting(data_dir: Path) -> None:
    with pytest.raises(ValueError, match=r"^SEEN_WORKER_ID must be .*, not '\.\./w0'$"):
        UrlSeen.from_settings(project_settings(), data_dir, worker_id="../w0")


def test_defaults_are_settings_py() -> None:
    assert SeenConfig.from_settings(project_settings()) == SeenConfig()


def test_worker_ids_are_locked_one_writer_each(data_dir: Path) -> None:
    first, second = make(data_dir), make(data_dir)
    assert (first.worker_id, second.worker_id) == ("w0", "w1")
    with pytest.raises(RuntimeError, match="SEEN_WORKER_ID 'w1' is in use by live process"):
        UrlSeen.from_settings(project_settings(), data_dir, worker_id="w1")
    first.close()
    first.close()  # idempotent
    with make(data_dir) as third:
        assert third.worker_id == "w0"  # a restarted worker gets its files back
    second.close()
    with make(data_dir, worker_id="crawler-a.1") as named:
        assert (data_dir / "seen" / "crawler-a.1.g001.bloom").exists()
        assert named.worker_id == "crawler-a.1"


def _use_after_fork(seen: UrlSeen, out: Any) -> None:
    try:
        seen.split(["00000000000000aa"])
    except RuntimeError as exc:
        out.put(str(exc))
    else:
        out.put("no error")


def test_use_after_fork_is_refused(data_dir: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    with make(data_dir) as seen:
        child = ctx.Process(target=_use_after_fork, args=(seen, out))
        child.start()
        message = out.get(timeout=30)
        child.join(30)
    assert "created before a fork" in message
