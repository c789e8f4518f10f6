"""Session fixtures: one real redis-server (the project's embedded Redis) for tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from hypothesis import settings as hypothesis_settings

from extensions.state.connection import EmbeddedRedis, find_redis_server
from tests.dnsserver import local_dns  # noqa: F401  (fixture: a DNS server on loopback)
from tests.integration.redis_cluster import LocalCluster

# CI replays the same examples on every run (a submission must not fail on a draw);
# local runs keep exploring new examples.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


# Fixtures that one worker must run once for all its tests: shared by a module's tests.
SHARED_SCOPES = {"class", "module"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """For pytest-xdist's `--dist loadgroup` (scripts/test): a test that uses a module-
    scoped fixture (one crawl that several tests assert on) is grouped with its file, so
    the fixture runs once on one worker rather than once per worker; the other tests go
    to whichever worker is free. A test that names its own `xdist_group` keeps it."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and _shares_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def _shares_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)  # absent on non-Python items
    if info is None:
        return False
    scopes = {d.scope for defs in info.name2fixturedefs.values() for d in defs}
    return bool(scopes & SHARED_SCOPES)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a redis-server on a free loopback port, stopped (by PID) at session end."""
    server = EmbeddedRedis(data_dir=tmp_path_factory.mktemp("redis"), binary=find_redis_server())
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client on a flushed database: every test starts from an empty Redis."""
    client = redis.Redis.from_url(redis_url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "crawl"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A three-master Redis Cluster on loopback, started on first use, stopped by PID."""
    cluster = LocalCluster(tmp_path_factory.mktemp("cluster")).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(redis_cluster: LocalCluster) -> LocalCluster:
    """The session's cluster, flushed: every test starts from empty masters."""
    redis_cluster.flush()
    return redis_cluster
