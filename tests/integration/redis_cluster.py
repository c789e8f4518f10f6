"""A real three-master Redis Cluster on loopback for tests (optionally one replica per
master, for failover), and a plain single redis-server: children that die with the
test process (PR_SET_PDEATHSIG), stopped, or SIGKILLed mid-crawl, by PID."""

from __future__ import annotations

import contextlib
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from extensions.state.connection import die_with_parent, find_redis_server

SLOTS = 16384
# A node also listens on its cluster bus, port + 10000: both must be free.
BUS_OFFSET = 10000


def _cluster_port() -> int:
    for _ in range(100):
        port = random.randrange(20000, 65536 - BUS_OFFSET)
        if _bindable(port) and _bindable(port + BUS_OFFSET):
            return port
    raise RuntimeError("no free loopback port pair (port, port + 10000) for a cluster node")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _redis_server(data_dir: Path, port: int, *options: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [find_redis_server(), "--port", str(port), "--bind", "127.0.0.1",
         "--dir", str(data_dir), "--save", "", "--appendonly", "no",
         "--logfile", str(data_dir / f"redis-{port}.log"), *options],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
    )  # fmt: skip


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        if process.poll() is None:
            process.kill()
            process.wait()


@dataclass
class LocalRedis:
    """One plain redis-server on a free loopback port."""

    data_dir: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    options: tuple[str, ...] = ()  # more redis-server arguments (e.g. "--appendonly", "yes")
    # The port, held after kill() until start() or stop(): bound, not listening, so a
    # crawl still asking for its lost Redis is refused, and no other test's server (on
    # another xdist worker: a crawl's embedded Redis, a test web) can take the port and
    # answer it. Once something did: a reply no frontier script gives, and a traceback.
    held: socket.socket | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> LocalRedis:
        """Start it (again, on the same port and data folder, once it has a port)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._release()
        self.port = self.port or _cluster_port()
        self.process = _redis_server(self.data_dir, self.port, *self.options)
        deadline = time.monotonic() + 20
        while not _answers(redis.Redis(host="127.0.0.1", port=self.port)):
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server not ready in 20s; see {self.data_dir}")
            time.sleep(0.05)
        return self

    def kill(self) -> None:
        """SIGKILL, as a crashed server: no shutdown, no goodbye to clients."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.held = _hold(self.port)

    def pause(self) -> None:
        """SIGSTOP: a stalled server (a fork on a huge dataset, a frozen VM) keeps its
        sockets, reads nothing and answers nothing until resume()."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)  # a paused one stops too
            _stop([self.process])
        self._release()

    def _release(self) -> None:
        if self.held is not None:
            self.held.close()
            self.held = None


def _hold(port: int) -> socket.socket:
    """A killed server's port, bound and not listening: connections to it are refused,
    and no other server takes it (it fails _bindable() and the kernel's port 0 choice)
    while a crawl still asks there for the Redis it lost. SO_REUSEADDR: the dead
    server's connections linger on the port in TIME_WAIT."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    held.bind(("127.0.0.1", port))
    return held


def _answers(node: redis.Redis) -> bool:
    try:
        return bool(node.ping())
    except redis.RedisError:
        return False


@dataclass
class LocalCluster:
    data_dir: Path
    masters: int = 3
    replicas: int = 0  # per master: with one, a SIGKILLed master's replica takes over
    start_timeout: float = 20.0
    # How long a silent master stays a master; Redis's 15 s default would stall a
    # failover test, and too short a one fails healthy masters on a loaded machine.
    node_timeout_ms: int = 15000
    ports: list[int] = field(default_factory=list)  # the masters', then the replicas'
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    held: list[socket.socket] = field(default_factory=list)  # killed masters' ports (_hold)

    @property
    def url(self) -> str:
        """REDIS_URL of one node: the crawl discovers the others."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def nodes(self) -> list[redis.Redis]:
        """A plain client per master (to look at what each one holds)."""
        return [redis.Redis(host="127.0.0.1", port=port) for port in self.ports[: self.masters]]

    def _all_nodes(self) -> list[redis.Redis]:
        return [redis.Redis(host="127.0.0.1", port=port) for port in self.ports]

    def start(self) -> LocalCluster:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(self.masters * (1 + self.replicas)):
            port = _cluster_port()
            self.ports.append(port)
            self.processes.append(_redis_server(
                self.data_dir, port, "--cluster-enabled", "yes",
                "--cluster-config-file", str(self.data_dir / f"nodes-{port}.conf"),
                "--cluster-node-timeout", str(self.node_timeout_ms),
            ))  # fmt: skip
        try:
            self._wait(lambda node: node.ping())
            self._assign_slots()
            self._wait(self._state_ok)
            self._add_replicas()
        except BaseException:
            self.stop()
            raise
        return self

    def kill(self, master: int) -> int:
        """SIGKILL master number `master`; its port (the node the crawl loses)."""
        process = self.processes[master]
        process.send_signal(signal.SIGKILL)
        process.wait()
        self.held.append(_hold(self.ports[master]))
        return self.ports[master]

    def _assign_slots(self) -> None:
        # Redis 6.2 has no ADDSLOTSRANGE: ADDSLOTS with every slot of the range.
        nodes = self.nodes()
        bounds = [SLOTS * i // self.masters for i in range(self.masters + 1)]
        for node, low, high in zip(nodes, bounds, bounds[1:], strict=False):
            node.execute_command("CLUSTER ADDSLOTS", *range(low, high))
        for port in self.ports[1:]:
            nodes[0].execute_command("CLUSTER MEET", "127.0.0.1", port)

    def _state_ok(self, node: redis.Redis) -> bool:
        info = node.cluster("INFO")
        return info["cluster_state"] == "ok" and int(info["cluster_known_nodes"]) == len(self.ports)

    def _add_replicas(self) -> None:
        """Replica r of master m is node masters * (r + 1) + m; waits until each syncs."""
        if not self.replicas:
            return
        ids = [node.execute_command("CLUSTER MYID") for node in self.nodes()]
        replicas = self._all_nodes()[self.masters :]
        for index, replica in enumerate(replicas):
            replica.execute_command("CLUSTER REPLICATE", ids[index % self.masters])
        self._wait(lambda node: node.info("replication").get("master_link_status") == "up",
                   replicas)  # fmt: skip

    def _wait(
        self, ready: Callable[[redis.Redis], bool], nodes: list[redis.Redis] | None = None
    ) -> None:
        deadline = time.monotonic() + self.start_timeout
        pending = self._all_nodes() if nodes is None else nodes
        while pending:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"Redis Cluster not ready in {self.start_timeout}s; see {self.data_dir}"
                )
            still = []
            for node in pending:
                try:
                    ok = ready(node)
                except redis.RedisError:
                    ok = False
                if not ok:
                    still.append(node)
            pending = still
            if pending:
                time.sleep(0.05)

    def flush(self) -> None:
        for node in self.nodes():
            node.flushall()

    def stop(self) -> None:
        _stop(self.processes)
        for held in self.held:
            held.close()
        self.held.clear()
