"""The scheduler tests' settings: the project's, on the test Redis and a fresh data dir
(the redis_client fixture flushes that Redis first), and frontiers on a virtual clock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from extensions.frontier.core import Frontier
from extensions.state.keys import FrontierKeys
from tests.project_settings import project_frontier_config
from tests.unit.frontier.scheduler_harness import settings_for
from tests.unit.frontier.test_frontier_sim import DELAY_S, VirtualClock


@pytest.fixture
def settings(redis_url: str, redis_client: Any, data_dir: Path) -> Callable[..., dict[str, Any]]:
    def make(**values: Any) -> dict[str, Any]:
        return settings_for(redis_url, data_dir, **values)

    return make


@pytest.fixture
def make_frontier(
    redis_url: str, redis_client: Any
) -> Callable[..., tuple[Frontier, VirtualClock]]:
    """Frontier(back_queues, crawl) on the test Redis, FRONTIER_DELAY = DELAY_S, its clock."""

    def make(back_queues: int = 1024, crawl: str = "sim") -> tuple[Frontier, VirtualClock]:
        clock = VirtualClock()
        client = aioredis.Redis.from_url(redis_url)
        config = project_frontier_config(delay=DELAY_S, back_queues=back_queues, lease_ttl=60)
        return Frontier(client, FrontierKeys(crawl), config, clock=clock), clock

    return make
