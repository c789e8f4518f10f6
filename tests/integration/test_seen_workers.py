"""Two worker processes, each with its own UrlSeen files, admitting through one Redis set."""

from __future__ import annotations

import json
import multiprocessing
import random
from pathlib import Path
from typing import Any

import pytest
import redis

from extensions.admission.seen import UrlSeen
from tests.project_settings import project_settings

SEEN_SET = "test:seen"
# The admit script's URL-seen step, per key: SADD, and admit only on 1.
ADMIT = """
local out = {}
for i, key in ipairs(ARGV) do out[i] = redis.call('SADD', KEYS[1], key) end
return out
"""
BATCH = 200


def _keys(n: int) -> list[str]:
    blob = random.Random(7).randbytes(8 * n).hex()
    return [blob[i : i + 16] for i in range(0, 16 * n, 16)]


def _worker(url: str, data_dir: str, settings: dict[str, Any], offers: list[str],
            barrier: Any, out: str) -> None:  # fmt: skip
    client = redis.Redis.from_url(url)
    admit = client.register_script(ADMIT)
    admitted: list[str] = []
    dropped = 0
    with UrlSeen.from_settings(project_settings(settings), Path(data_dir)) as seen:
        for start in range(0, len(offers), BATCH):
            batch = offers[start : start + BATCH]
            barrier.wait()  # lockstep: both workers offer the same overlap at the same time
            send, drop = seen.split(batch)
            dropped += len(drop)
            sent = [batch[i] for i in send]
            if sent:
                results = admit(keys=[SEEN_SET], args=sent)
                admitted += [key for key, added in zip(sent, results, strict=True) if added]
                seen.record(sent)  # after the script: every sent key is in the set now
        result = {"worker_id": seen.worker_id, "admitted": admitted, "dropped": dropped,
                  "generations": seen.generations}  # fmt: skip
    Path(out).write_text(json.dumps(result))


@pytest.mark.parametrize(
    "settings",
    [
        {"SEEN_EXACT": True, "SEEN_CAPACITY": 4000},
        # 40 bits/key (p ~ 5e-9): a false positive, the documented loss of this mode, is
        # out of reach here, so coverage can be asserted too.
        {"SEEN_EXACT": False, "SEEN_CAPACITY": 4000, "SEEN_BITS_PER_KEY": 40},
    ],
    ids=["exact", "bloom-only"],
)
def test_two_workers_never_both_admit_a_url(
    redis_client: redis.Redis, redis_url: str, data_dir: Path, tmp_path: Path,
    settings: dict[str, Any],
) -> None:  # fmt: skip
    redis_client.flushall()
    keys = _keys(12_000)
    overlap, only_a, only_b = keys[:6000], keys[6000:9000], keys[9000:]
    rng = random.Random(8)
    # Both offer the overlap first in the same order (maximal races), then their own keys,
    # then everything again (repeat links), with some keys twice in one batch.
    offers_a = overlap + only_a + rng.sample(overlap + only_a, 9000) + only_a[:500]
    offers_b = overlap + only_b + rng.sample(overlap + only_b, 9000) + only_b[:500]
    offers_b = offers_b[: len(offers_a)]  # same batch count: the barrier needs both
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    procs = [
        ctx.Process(target=_worker,
                    args=(redis_url, str(data_dir), settings, offers, barrier, str(out)))
        for offers, out in ((offers_a, outs[0]), (offers_b, outs[1]))
    ]  # fmt: skip
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    a, b = (json.loads(out.read_text()) for out in outs)

    assert {a["worker_id"], b["worker_id"]} == {"w0", "w1"}  # own files each
    assert len(set(a["admitted"])) == len(a["admitted"])
    assert len(set(b["admitted"])) == len(b["admitted"])
    assert not set(a["admitted"]) & set(b["admitted"])
    assert set(a["admitted"]) | set(b["admitted"]) == set(offers_a) | set(offers_b)
    assert redis_client.scard(SEEN_SET) == len(set(offers_a) | set(offers_b))
    # The repeats were answered locally: from the LRU (exact) or the Bloom (bloom-only).
    assert a["dropped"] >= 9000 and b["dropped"] >= 9000
    assert a["generations"] >= 2 and b["generations"] >= 2  # capacity 4000 rolled over
    files = sorted(p.name for p in (data_dir / "seen").glob("*.bloom"))
    assert {"w0.g001.bloom", "w1.g001.bloom", "w0.g002.bloom", "w1.g002.bloom"} <= set(files)
