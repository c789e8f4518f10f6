"""What the operator commands (`scrapy seed|throttle|block|unblock|pause|resume|status|
recrawl`) share: the crawl's frontier admin API, and one-line errors.

They act on a running crawl through Redis, without a restart, and only through
extensions/frontier/admin.py (no command knows a key name). With REDIS_URL they use
that server; otherwise the embedded server of the crawl's data folder when a crawl is
running, else they start it for the duration of the command (state lives in its AOF).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import redis
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from extensions.admission.politeness_key import HOST_IP_KEYS
from extensions.config import read
from extensions.dns.resolver import parse_hosts_map
from extensions.frontier.admin import FrontierAdmin
from extensions.frontier.sharded import crawl_keys
from extensions.state.connection import (
    AnyRedis,
    EmbeddedRedis,
    RedisUnavailable,
    connect_url,
    data_dir_from_settings,
    find_redis_server,
)


class OperatorError(RuntimeError):
    """A problem the operator must fix; printed as one line, exit status 2."""


class OperatorCommand(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--crawl", default=None, help="crawl name (default: web)")
        parser.add_argument("--json", action="store_true", help="machine-readable output")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        crawl = opts.crawl or self.settings.get("FRONTIER_CRAWL_NAME") or "web"
        try:
            with crawl_redis(self.settings) as client:
                keys = crawl_keys(client, crawl, self.settings.getint("FRONTIER_SHARDS"))
                politeness = read(HOST_IP_KEYS, self.settings)  # FRONTIER_HOST_IP_NETWORKS
                admin = FrontierAdmin(client, keys, self._pinned, politeness)
                result = self.act(admin, args, opts)
        except (OperatorError, RedisUnavailable, ValueError) as exc:
            print(f"crawlproj: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        except redis.RedisError as exc:
            print(f"crawlproj: Redis error: {str(exc).splitlines()[0]}", file=sys.stderr)
            self.exitcode = 2
            return
        emit(result, opts.json)

    def act(
        self, admin: FrontierAdmin, args: list[str], opts: argparse.Namespace
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _pinned(self, host: str) -> str | None:
        """The host's DNS_HOSTS_MAP IP; the setting is read only when a verb names a host."""
        assert self.settings is not None
        return parse_hosts_map(self.settings.get("DNS_HOSTS_MAP")).get(host)


def emit(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
        return
    message = result.pop("message", None)
    if message:
        print(message)
    for name, value in result.items():
        print(f"{name}: {value}")


@contextlib.contextmanager
def crawl_redis(settings: Any) -> Iterator[AnyRedis]:
    """The crawl's Redis: REDIS_URL, the running crawl's embedded server, or one
    started here on the same data folder for as long as the command runs."""
    if settings.get("REDIS_URL"):
        client = connect_url(settings.get("REDIS_URL"))
        yield client
        client.close()
        return
    data_dir = data_dir_from_settings(settings)
    port_file = data_dir / "redis" / "server.port"
    if port_file.exists():
        with contextlib.suppress(RedisUnavailable, ValueError):
            client = connect_url(f"redis://127.0.0.1:{int(port_file.read_text())}/0")
            yield client
            client.close()
            return
    binary = find_redis_server(settings.get("REDIS_SERVER_BIN") or "")
    server = EmbeddedRedis(data_dir=data_dir, binary=binary)
    server.start()
    try:
        client = connect_url(server.url)
        yield client
        client.close()
    finally:
        server.stop()


def need(args: list[str], what: str) -> None:
    if not args:
        raise UsageError(f"missing {what}", print_help=False)
