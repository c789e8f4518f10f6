"""A crawl stopped by the code before the layout change resumes with today's code.

Issue #11 moved extensions/ into stage packages on the promise that Redis key names and
record formats stay as they were. tests/fixtures/resume_684ac15 is the data folder of a
crawl that commit 684ac15 (the last flat layout) stopped part way
(tests/fixtures/make_resume_fixture.py made it); here the current code resumes it on the
same test web, served again on the fixture's fixed address, and must fetch exactly the
pages the old crawl had not, politely, and stop by itself.
"""

from __future__ import annotations

import json
import os
import socket
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis

from crawlproj import settings as project_settings
from extensions.admission.admit import seen_key
from extensions.content.simhash_index import index_keys
from extensions.content.soft404 import PROBE_SUFFIX
from extensions.state.connection import EmbeddedRedis, find_redis_server
from extensions.state.keys import FrontierKeys
from scripts.crawlrun import per_ip_violations, run_crawl
from scripts.testweb import TestWeb, WebSpec

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "resume_684ac15"
# FRONTIER_CRAWL_NAME is unset in both runs: the crawl is named after the spider.
CRAWL = "web"


def manifest() -> dict[str, Any]:
    return json.loads((FIXTURE / "manifest.json").read_text())


def unpack(dest: Path) -> Path:
    with tarfile.open(FIXTURE / "data.tar.gz") as tar:
        tar.extractall(dest, filter="data")
    return dest


def require_address(made: dict[str, Any]) -> None:
    """Skip when another process holds the fixture's port: its queued URLs name it."""
    port = made["port"]
    for ip in sorted(set(made["hosts_map"].values())):
        with socket.socket() as probe:
            # As twisted's listenTCP does: a TIME_WAIT left by an earlier run is no conflict.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((ip, port))
            except OSError as exc:
                pytest.skip(f"{ip}:{port}, the fixture's test-web address, is taken ({exc})")


def fixture_keys(data_dir: Path) -> set[str]:
    """Every key of the fixture's Redis, read by a redis-server replaying its AOF."""
    server = EmbeddedRedis(data_dir=data_dir, binary=find_redis_server())
    server.start()
    try:
        client = redis.Redis.from_url(server.url)
        keys = {os.fsdecode(key) for key in client.keys("*")}
        client.close()
    finally:
        server.stop()
    return keys


def keys_py_names(made: dict[str, Any]) -> set[str]:
    """The names extensions/state/keys.py gives this crawl's keys on this web.

    Fixed keys and families come from its FIXED_KEYS and FAMILIES tables; a family
    keys.py gains without a suffix rule here fails with a KeyError, on purpose.
    """
    keys = FrontierKeys(CRAWL)
    hosts, ips = list(made["hosts_map"]), set(made["hosts_map"].values())
    suffixes = {
        "front": [str(p) for p in range(len(project_settings.FRONTIER_PRIORITY_WEIGHTS))],
        "bq": ips,
        "rq": ips,
        "ip": ips,
        "pending": hosts,
        "doc": [seen_key(url) for url in made["pages"]],
        "bloom": [],  # the fixture predates URL-seen's Bloom filter: its exact set only
    }
    names = {prefix + s for family, prefix in keys.families().items() for s in suffixes[family]}
    names |= set(keys.fixed())
    names |= {keys.blocklist, keys.shards, keys.legacy_pages.content_hashes}
    pages = keys.legacy_pages  # unsharded: per-page state on the crawl's tag
    names |= {pages.recrawl_due, pages.recrawl_rates, pages.recrawl_claims}
    names |= set(index_keys(keys.neardup, project_settings.NEARDUP_BLOCKS).all())
    names |= {keys.dns(host) for host in hosts}
    names |= {keys.robots(f"http://{host}:{made['port']}") for host in hosts}
    return names


def test_fixture_keys_are_the_names_keys_py_gives(tmp_path: Path) -> None:
    made = manifest()
    listed = fixture_keys(unpack(tmp_path / "data"))
    assert sorted(listed - keys_py_names(made)) == []
    keys = FrontierKeys(CRAWL)
    # The fixture holds a crawl in mid-flight, not an empty shell: queues, per-IP
    # politeness, robots verdicts and one re-crawl state per fetched page.
    assert {keys.key(name) for name in ("seen", "ready", "active", "stats")} <= listed
    ips = set(made["hosts_map"].values())
    assert {keys.ip_state(ip) for ip in ips} <= listed
    assert any(keys.back_queue(ip) in listed for ip in ips)
    robots = {keys.robots(f"http://{host}:{made['port']}") for host in made["hosts_map"]}
    assert robots <= listed
    docs = {key for key in listed if key.startswith(keys.legacy_pages.doc(""))}
    assert docs == {keys.legacy_pages.doc(seen_key(url)) for url in made["fetched"]}


def test_resume_fetches_exactly_the_rest_politely(tmp_path: Path) -> None:
    made = manifest()
    require_address(made)
    data_dir = unpack(tmp_path / "data")
    spec = WebSpec.from_dict(made["web"])
    with TestWeb(spec, port=made["port"], lifetime=300) as web:
        # The same web as when the fixture was made, or the comparison below means nothing.
        assert (web.hosts_map_setting(), sorted(web.pages)) == (made["hosts_map"], made["pages"])
        settings = {**made["settings"], "DNS_HOSTS_MAP": web.hosts_map_setting()}
        result = run_crawl(None, data_dir, settings, timeout=180)
        requests = web.requests()
    assert result.returncode == 0, result.log[-3000:]
    assert "'finish_reason': 'finished'" in result.log, result.log[-3000:]
    # Each host is probed for soft-404s at most once (the old crawl knew no probes).
    probes = Counter(r["host"] for r in requests if r["path"].endswith(PROBE_SUFFIX))
    assert set(probes.values()) <= {1}
    asked = ("/robots.txt", *(r["path"] for r in requests if r["path"].endswith(PROBE_SUFFIX)))
    fetched = Counter(r["url"] for r in requests if r["path"] not in asked)
    assert [url for url, n in fetched.items() if n > 1] == []
    assert sorted(fetched) == sorted(set(made["pages"]) - set(made["fetched"]))
    # The old crawl's robots verdicts were read, not fetched again.
    assert [r["url"] for r in requests if r["path"] == "/robots.txt"] == []
    delay = made["settings"]["FRONTIER_DELAY"]
    assert per_ip_violations(requests, delay) == (1, [])
