"""A real three-master Redis Cluster on loopback for tests: redis-server children that
die with the test process (PR_SET_PDEATHSIG), stopped by PID at teardown."""

from __future__ import annotations

import contextlib
import random
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


@dataclass
class LocalCluster:
    data_dir: Path
    masters: int = 3
    start_timeout: float = 20.0
    ports: list[int] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        """REDIS_URL of one node: the crawl discovers the others."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def nodes(self) -> list[redis.Redis]:
        """A plain client per master (to look at what each one holds)."""
        return [redis.Redis(host="127.0.0.1", port=port) for port in self.ports]

    def start(self) -> LocalCluster:
        binary = find_redis_server()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(self.masters):
            port = _cluster_port()
            self.ports.append(port)
            self.processes.append(subprocess.Popen(
                [binary, "--port", str(port), "--bind", "127.0.0.1",
                 "--cluster-enabled", "yes",
                 "--cluster-config-file", str(self.data_dir / f"nodes-{port}.conf"),
                 "--dir", str(self.data_dir), "--save", "", "--appendonly", "no",
                 "--logfile", str(self.data_dir / f"redis-{port}.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                preexec_fn=die_with_parent,
            ))  # fmt: skip
        try:
            self._wait(lambda node: node.ping())
            self._assign_slots()
            self._wait(self._state_ok)
        except BaseException:
            self.stop()
            raise
        return self

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
        return info["cluster_state"] == "ok" and int(info["cluster_known_nodes"]) == self.masters

    def _wait(self, ready: Callable[[redis.Redis], bool]) -> None:
        deadline = time.monotonic() + self.start_timeout
        pending = self.nodes()
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
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
            if process.poll() is None:
                process.kill()
                process.wait()
