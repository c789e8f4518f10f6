"""The script argument Frontier builds from JSON encoded once per frontier is the same
object the scripts read when every call encoded the whole payload."""

from __future__ import annotations

import json
from typing import Any

import redis.asyncio as aioredis

from extensions.admission.records import AdmitItem
from extensions.frontier.core import DownloadEvent, Frontier
from extensions.state.keys import FrontierKeys
from tests.project_settings import project_frontier_config


def whole_payload(frontier: Frontier, args: dict[str, Any]) -> dict[str, Any]:
    """What every call used to send: json.dumps of the whole dict."""
    cfg = frontier.config.lua()
    payload = {"now": frontier.clock(), "cfg": cfg, "families": frontier.keys.families()}
    return json.loads(json.dumps({**payload, **args}))


def without_seed(payload: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    cfg = dict(payload["cfg"])
    seed = cfg.pop("seed")
    return {**payload, "cfg": cfg}, seed


def test_the_payload_is_the_whole_dict_encoded_at_once() -> None:
    client = aioredis.Redis()  # never connected: payloads only
    config = project_frontier_config(delay=1.5, back_queues=64)
    frontier = Frontier(client, FrontierKeys("pay", tag="s1"), config, clock=lambda: 1234.5)
    item = AdmitItem("k", "10.0.0.1", "a.test", -1, "~x,3|a.test/é", score=2.5)
    event = DownloadEvent("done", "10.0.0.1#1", 1234.0, 503, retry_after=7.0, host="a.test")
    cases: list[dict[str, Any]] = [
        {},
        {"n": 5},
        {"items": [item.lua()]},
        {"events": [event.lua()], "host": "a.test", "retry_at": None, "drop": False},
    ]
    for args in cases:
        sent, seed = without_seed(json.loads(frontier.payload(args)))
        expected, _ = without_seed(whole_payload(frontier, args))
        assert sent == expected
        assert isinstance(seed, int) and 0 <= seed < 2**31
    seeds = {without_seed(json.loads(frontier.payload({})))[1] for _ in range(20)}
    assert len(seeds) > 1  # a fresh seed per call, as config.lua() draws
