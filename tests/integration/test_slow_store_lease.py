"""A page whose body takes longer to store than its lease lives is fetched once: the
worker renews the leases it still holds (extensions/frontier/leases.py), so the
frontier does not hand the page out again while the checkpoint waits on S3.

S3 is moto's server behind a forwarder that holds every answer back, so each store
(HEAD + PUT) takes longer than FRONTIER_LEASE_TTL; the test web's log counts fetches.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

from scripts.crawlrun import run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.s3_support import MotoServer, TcpForwarder
from tests.integration.test_gates import stats_of

LEASE_TTL_S = 2.0
ANSWER_DELAY_S = 1.5  # per answer: a store (HEAD + PUT) takes >= 3 s, past the TTL


class SlowForwarder(TcpForwarder):
    """TcpForwarder whose upstream answers each wait ANSWER_DELAY_S before they go on."""

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()
            threading.Thread(target=_slow_pump, args=(server, client), daemon=True).start()


def _slow_pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            time.sleep(ANSWER_DELAY_S)
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def test_a_page_stored_slower_than_its_lease_ttl_is_fetched_once(
    moto_s3: MotoServer, tmp_path: Path
) -> None:
    bucket = f"slow-{uuid.uuid4().hex[:10]}"
    moto_s3.client().create_bucket(Bucket=bucket)
    forwarder = SlowForwarder(("127.0.0.1", moto_s3.port)).start()
    spec = WebSpec(hosts=[HostSpec("slowstore.test", pages=3)])
    try:
        with TestWeb(spec, lifetime=120) as web:
            settings = {
                **moto_s3.settings(f"s3://{bucket}/pages", endpoint=forwarder.endpoint),
                "DNS_HOSTS_MAP": web.hosts_map_setting(),
                "FRONTIER_DELAY": 0.1,
                "DOWNLOAD_TIMEOUT": 1.5,
                "FRONTIER_LEASE_TTL": LEASE_TTL_S,
                "PAGESTORE_TIMEOUT": 10.0,
            }
            seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
            result = run_crawl(seeds, tmp_path / "data", settings, timeout=180)
            requests = web.requests()
    finally:
        forwarder.close()
    assert result.returncode == 0, result.log[-4000:]
    fetched = Counter(r["path"] for r in requests)
    assert set(web.pages) <= {r["url"] for r in requests}
    assert [path for path, n in fetched.items() if n > 1] == []
    stats = stats_of(result)
    assert stats.get("frontier/redis/lease_expired", 0) == 0
    assert stats["frontier/leases_renewed"] >= 1
    assert len(moto_s3.keys(bucket, "pages/")) >= len(web.pages) // 2  # the bodies did land
