"""Every Redis key of a crawl, in one place.

All keys of one crawl share the hash tag `{<crawl>}` so that on Redis Cluster they
live on one slot and every multi-key Lua step stays atomic. Per-IP and per-host
families (back queues, politeness state, pending hosts) are given to the Lua
scripts as prefixes: the script appends the IP or host.

Keys (prefix P = "crawlproj:{<crawl>}"):
    P:front:<p>      list    front queue of priority p: "ip|record" not yet routed
    P:bq:<ip>        list    back queue of one resolved IP: records (discovery)
    P:rq:<ip>        list    the IP's re-crawl back queue: "R|record"; lease.lua takes
                             from it RECRAWL_SHARE of the fetches the two queues contest
    P:ip:<ip>        hash    politeness state: last_start, last_end, inflight,
                             crawl_delay, override, adaptive, blocked_until, errs, timeouts,
                             rcredit (re-crawl share credit)
    P:active         set     IPs that hold a back queue (at most FRONTIER_BACK_QUEUES)
    P:ready          zset    ready heap: ip -> next_fetch_at
    P:leases         zset    lease id -> expires_at
    P:lease_data     hash    lease id -> "ip|record"
    P:lease_dl       hash    lease id -> 1 while its download is in flight
    P:lease_seq      string  lease id counter
    P:seen           set     8-byte fingerprints of admitted canonical URLs
    P:pending:<host> list    "p|record" waiting for <host> to resolve
    P:pending_hosts  zset    host -> next resolution attempt
    P:stats          hash    counters: queued, admitted, duplicate, leased, lease_expired, ...
    P:host_pages     hash    host -> URLs admitted this crawl (FRONTIER_MAX_PAGES_PER_HOST)
    P:patterns       hash    trap pattern -> URLs admitted (URL_MAX_PER_PATTERN)
    P:blocklist      set     operator block rules (host:..., re:..., globs)
    P:paused         string  set = the whole crawl is paused (kill switch)
    P:paused_ips     hash    ip -> the host/IP the operator paused (shared hosting pauses too)
    P:host_stats     hash    "<host>|<counter>" -> count: fetched, status_2xx.., timeout, error
    P:dns:<host>     string  "ok|fail value fresh_until stale_until", shared DNS cache
    P:robots:<origin> string robots.txt verdict JSON, expiring with the verdict
    P:content_hashes hash    content hash (sha256 hex) -> URL of the first page with it
    P:doc:<fp>       hash    re-crawl state of one stored URL (extensions/recrawl.py): u, at,
                             etag, lm, ch, sh, ref, rate, obs, gone
    P:recrawl_due    zset    fp -> next due time (a claimed fp: its claim's expiry)
    P:recrawl_rates  hash    change-rate histogram bucket -> stored URLs (the policy input)
    P:neardup:*      -       simhash index (extensions/neardup_index.py): :t<i> hash
                             tables, :docs, :log, :overflows
"""

from __future__ import annotations

from dataclasses import dataclass

KEY_ROOT = "crawlproj"


@dataclass(frozen=True)
class FrontierKeys:
    crawl: str

    @property
    def prefix(self) -> str:
        return f"{KEY_ROOT}:{{{self.crawl}}}"

    def key(self, name: str) -> str:
        return f"{self.prefix}:{name}"

    # Fixed keys, in the order the Lua scripts receive them as KEYS[1..n].
    def fixed(self) -> list[str]:
        return [self.key(name) for name in FIXED_KEYS]

    # Prefixes of key families; a script appends the IP, host or priority.
    def families(self) -> dict[str, str]:
        return {name: self.key(name) + ":" for name in FAMILIES}

    def back_queue(self, ip: str) -> str:
        return self.key(f"bq:{ip}")

    def ip_state(self, ip: str) -> str:
        return self.key(f"ip:{ip}")

    def recrawl_queue(self, ip: str) -> str:
        return self.key(f"rq:{ip}")

    def doc(self, fp: str) -> str:
        return self.key(f"doc:{fp}")

    @property
    def recrawl_due(self) -> str:
        return self.key("recrawl_due")

    @property
    def recrawl_rates(self) -> str:
        return self.key("recrawl_rates")

    def front_queue(self, priority: int) -> str:
        return self.key(f"front:{priority}")

    def pending(self, host: str) -> str:
        return self.key(f"pending:{host}")

    def dns(self, host: str) -> str:
        return self.key(f"dns:{host}")

    def robots(self, origin: str) -> str:
        return self.key(f"robots:{origin}")

    @property
    def blocklist(self) -> str:
        return self.key("blocklist")

    @property
    def content_hashes(self) -> str:
        """Exact duplicates: content hash -> first URL (HSETNX, first writer wins)."""
        return self.key("content_hashes")

    @property
    def neardup(self) -> str:
        """Key prefix of the crawl's simhash index (SimhashIndex appends its suffixes)."""
        return self.key("neardup")

    def pattern(self) -> str:
        """Glob matching every key of this crawl (for tooling and tests)."""
        return f"{self.prefix}:*"


# Names of fixed keys; the Lua side reads them by position through the same list.
FIXED_KEYS = (
    "ready",
    "active",
    "leases",
    "lease_data",
    "lease_dl",
    "lease_seq",
    "seen",
    "pending_hosts",
    "stats",
    "host_pages",
    "patterns",
    "paused",
    "paused_ips",
    "host_stats",
)
FAMILIES = ("front", "bq", "rq", "ip", "pending", "doc")
