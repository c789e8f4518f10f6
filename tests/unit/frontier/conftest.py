"""The scheduler tests' settings: the project's, on the test Redis and a fresh data dir
(the redis_client fixture flushes that Redis first)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.frontier.scheduler_harness import settings_for


@pytest.fixture
def settings(redis_url: str, redis_client: Any, data_dir: Path) -> Callable[..., dict[str, Any]]:
    def make(**values: Any) -> dict[str, Any]:
        return settings_for(redis_url, data_dir, **values)

    return make
