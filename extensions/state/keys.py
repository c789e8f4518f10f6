"""Every Redis key of a crawl, in one place.

The frontier may be split into FRONTIER_SHARDS shards. Shard i of S > 1 has its own hash tag
`{<crawl>:s<i>~<salt>}`, salted as page shards are (below), so on Redis Cluster each shard
is one slot and the shards (with their Bloom bitmaps, most of a crawl's memory) split evenly
over the masters: plain `{<crawl>:s<i>}` tags, which a sharded crawl created before salting
keeps (no G:shard_tags), fell 3/4/5 for 12 shards over three. With S = 1 (a single Redis)
the one shard uses the crawl's tag `{<crawl>}`, exactly the keys of an unsharded crawl. An
IP belongs to shard crc32(ip) mod S: its back queue, politeness state and ready-heap entry
sit in one slot, so every Lua step stays atomic. "<ip>" below is the politeness key: the IP,
or "<ip>@<host>" inside FRONTIER_HOST_IP_NETWORKS (admission/politeness_key.py), which lives
in its IP's shard. Per-IP and per-host families (back queues, politeness state, pending
hosts) are given to the scripts as prefixes: the key a script builds by appending the IP or
host lands in its slot because the prefix carries the shard's hash tag.

URL-seen, the host budget and the pattern cap live in the shard of the URL's IP, not of the
URL: the admit script then checks seen, charges the budget and queues the URL in one atomic
step, with no window where a URL is marked seen but not queued. The price: a URL reached
through two IPs (a host that moved) can be admitted once per shard, and budgets are counted
per shard of the IP (a host has one IP, so exactly). Unresolved hosts park in shard
crc32(host) mod S unchecked (see sharded.py).

Crawl-wide keys (blocklist, the shard count, the simhash index's commit ring) keep the
crawl's tag `{<crawl>}` in every mode: one slot, read by every worker.

Per-page and per-host state (re-crawl state, DNS and robots caches, content hashes, page
templates, WARC originals, the simhash index's tables and sketches) grows with the crawl, so
on a sharded crawl (S > 1) it spreads over S page shards with tags `{<crawl>:p<i>~<salt>}`:
a page's state goes to shard crc32(fp) mod S, a host's cache entries to crc32(host) mod S, a
hash field (content hash, template digest, URL) to crc32(field) mod S. The salt puts shard
i's slot in the i-th S-th of the 16,384 slots, so on a cluster whose masters own contiguous,
equal slot ranges (what `redis-cli --cluster create` makes) the shards split evenly over the
masters; plain `{web:p<i>}` tags fell 4/2/6 over three. No script reads them beside an IP's
keys. With S = 1 they keep the crawl's tag. A sharded crawl started before page shards kept
them under `{<crawl>}`: its re-crawl state is still read there (recrawl/state.py moves a
page on its next fetch), and so are its content hashes, templates and WARC originals on a
miss in the page shard while it has no G:shard_tags (state/page_hashes.py); its DNS and
robots entries are not (caches).

Frontier keys (prefix P = "crawlproj:{<crawl>}", or "crawlproj:{<shard tag>}"):
    P:front:<p>      list    front queue of priority p: "ip|lane|record" not yet routed (a
                             queued record lacks its URL's authority if it is P:ip_home's)
    P:ip_home        hash    ip -> authority of its first queued URL (frontier/lua/authority.lua)
    P:bq:<ip>        list    back queue of one resolved IP, lane 0 (its best-scored records);
    P:bq:<ip>/<L>    list    lane L = 1 .. priorities-1 of it (the router files a record
                             in the lane of its score bucket; lease.lua takes the best lane)
    P:rq:<ip>        list    the IP's re-crawl back queue: "R|record"; lease.lua takes
                             from it RECRAWL_SHARE of the fetches the two queues contest
    P:ip:<ip>        hash    politeness state: last_start, last_end, inflight,
                             crawl_delay, override, adaptive, blocked_until, errs, timeouts,
                             rcredit (re-crawl share credit); "cd|<host>" -> "delay,expires_at"
                             per host on the IP (crawl_delay = the max of those still current)
    P:active         set     IPs that hold a back queue (at most FRONTIER_BACK_QUEUES)
    P:ready          zset    ready heap: ip -> next_fetch_at
    P:leases         zset    lease id -> expires_at
    P:lease_data     hash    lease id -> "ip|record"
    P:lease_dl       hash    lease id -> 1 while its download is in flight, 2 from its
                             'done' to its ack (the IP stays held)
    P:lease_seq      string  lease id counter
    P:seen           set     8-byte fingerprints of admitted canonical URLs: only with
                             SEEN_EXACT, or from a crawl that predates the Bloom filter
    P:seen_bloom     hash    URL-seen Bloom generations (admission/bloom.py): g (newest),
                             per generation <g>: n<g> capacity, k<g> hashes, m<g> bits per
                             segment, s<g> segments, c<g> keys inserted; legacy (1: P:seen
                             is checked on every Bloom miss)
    P:bloom:<g>:<s>  string  bitmap segment s of Bloom generation g (frontier/lua/bloom.lua)
    P:shapes         string  URL patterns seen once: 2 bits each in 8 bits per key of the
                             newest Bloom generation (emptied when a new one starts)
    P:pending:<host> list    "p|record" waiting for <host> to resolve (sharded: "p|parked",
                             parked = JSON {k: seen key, pt: pattern, r: record})
    P:pending_hosts  zset    host -> next resolution attempt
    P:stats          hash    counters: queued, admitted, duplicate, leased, lease_expired, ...
    P:host_pages     hash    host -> URLs admitted this crawl (FRONTIER_MAX_PAGES_PER_HOST)
    P:patterns       hash    URL pattern (extensions/admission/patterns.py) -> trap feedback
                             "admitted,n,bad,fresh,state,probes,outcomes,live,dead,dead_n"
                             (traps.lua), zeros cut, from its 2nd URL, PATTERNS_PER_HOST x 2 + 1;
                             "q|<host><path>" -> query variants admitted (PRIORITY_FACET_MAX)
    P:trap_hosts     hash    host -> pattern fields it holds (PRIORITY_PATTERNS_PER_HOST)
    P:closed_patterns set    patterns closed by trap feedback, "n|<end>|<pattern>" sequence ends
    P:host_info      hash    "<host>|r" -> distinct referring hosts, "<host>|s" -> sitemap URLs
    P:paused         string  set = the whole crawl is paused (kill switch)
    P:paused_ips     hash    ip -> the host/IP the operator paused (shared hosting pauses too)
    P:host_stats     hash    "<host>|<counter>" -> count: fetched, status_2xx.., timeout, error

Crawl-wide keys (prefix G = "crawlproj:{<crawl>}"; D = G unsharded, else the page shard's
prefix "crawlproj:{<crawl>:p<i>~<salt>}"):
    G:shards         string  the crawl's shard count, fixed when its frontier is created
    G:shard_tags     string  "salted": frontier shard tags are salted (set with G:shards)
    G:blocklist      set     operator block rules (host:..., re:..., globs)
    D:dns:<host>     string  "ok|fail value fresh_until stale_until", shared DNS cache
    D:robots:<origin> string robots.txt verdict JSON, expiring with the verdict (the shard
                             of the origin's host: admin.robots scans "*://<host>*")
    G:robots_errors  hash    origin -> robots.txt fetches unavailable in a row, all workers
                             together (ROBOTS_MAX_ERROR_RETRIES; a good verdict deletes it)
    G:worker_stats   hash    worker-side Scrapy stats added up by every worker (observe/
                             shared_stats.py): frontier/rejected/<reason>, robots/failed/<cause>
    D:content_hashes hash    content hash (sha256 hex) -> URL of the first page with it
    D:warc_records   hash    URL -> "<WARC-Date> <WARC-Record-ID> <payload digest>" of its
                             latest full WARC response record (revisits refer to it)
    G:noise_counts   hash    "<host> <param>[ <what>]" -> count, "...=<item>" (noise_evidence.py)
    G:noise_params   set     learned "<host> <param>[=<value>]": admission drops them
    D:page_templates hash    template digest (16 hex) -> "<depth> <first URL>" (older: the URL):
                             a deeper page with the digest is a template copy (trap feedback)
    G:soft404        hash    origin -> soft-404 probe state JSON (extensions/content/soft404.py):
                             claimed (HSETNX by the first worker) or the answer's fingerprint
    D:doc:<fp>       string  re-crawl state of one stored URL, JSON (extensions/recrawl/state.py):
                             u, at, visits, etag, lm, ch, th, sh, ref, dup, rate, obs, bucket,
                             cb, d (one string: a hash of long values costs 3x the memory)
    D:recrawl_due    zset    fp -> next due time (a claimed fp: its claim's expiry), per
                             page shard: commit.lua moves a doc and its due time together
    D:recrawl_claims hash    fp -> claimed until (a feeder sent it to the frontier)
    D:recrawl_rates  hash    change-rate histogram bucket -> stored URLs (the policy input:
                             the sum over the page shards)
    D:neardup2:*     -       simhash index (content/simhash_keys.py): :t<i>, :docs, :sketches,
                             :overflows; G:neardup2:recent, :count its commit ring, :log (before
                             the ring). "2": shingle fingerprints, not comparable with G:neardup:*
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from extensions.state.tags import origin_host, salted_tag

KEY_ROOT = "crawlproj"
# G:shard_tags of a crawl whose frontier shards have salted tags (ShardedKeys.shard_tag).
SALTED_TAGS = "salted"


@dataclass(frozen=True)
class PageKeys:
    """Per-page state of one page shard (index None: the crawl's own tag, unsharded)."""

    crawl: str
    index: int | None = None
    count: int = 1

    @property
    def prefix(self) -> str:
        tag = (
            self.crawl
            if self.index is None
            else salted_tag(self.crawl, "p", self.index, self.count)
        )
        return f"{KEY_ROOT}:{{{tag}}}"

    def doc(self, fp: str) -> str:
        return f"{self.prefix}:doc:{fp}"

    @property
    def recrawl_due(self) -> str:
        return f"{self.prefix}:recrawl_due"

    @property
    def recrawl_rates(self) -> str:
        return f"{self.prefix}:recrawl_rates"

    @property
    def recrawl_claims(self) -> str:
        return f"{self.prefix}:recrawl_claims"

    @property
    def content_hashes(self) -> str:
        """Exact duplicates: content hash -> first URL (HSETNX, first writer wins)."""
        return f"{self.prefix}:content_hashes"

    @property
    def page_templates(self) -> str:
        """Template digest -> first URL (extensions/content/template.py), HSETNX."""
        return f"{self.prefix}:page_templates"

    @property
    def warc_records(self) -> str:
        """URL -> its latest WARC response record (crawlproj/pipelines/warc.py), HSET."""
        return f"{self.prefix}:warc_records"

    @property
    def neardup(self) -> str:
        """Prefix of this shard's part of the simhash index (content/simhash_keys.py)."""
        return f"{self.prefix}:neardup2"


@dataclass(frozen=True)
class FrontierKeys:
    """The keys of one frontier shard (tag None: the crawl's own tag, unsharded; else
    ShardedKeys.shard_tag); `page_shards`: the crawl's shard count, which also spreads
    its per-page state."""

    crawl: str
    tag: str | None = None
    page_shards: int = 1

    @property
    def prefix(self) -> str:
        return f"{KEY_ROOT}:{{{self.tag or self.crawl}}}"

    @property
    def crawl_prefix(self) -> str:
        """Prefix of the crawl-wide keys: the crawl's tag whatever the shard."""
        return f"{KEY_ROOT}:{{{self.crawl}}}"

    def key(self, name: str) -> str:
        return f"{self.prefix}:{name}"

    # Fixed keys, in the order the Lua scripts receive them as KEYS[1..n].
    def fixed(self) -> list[str]:
        return [self.key(name) for name in FIXED_KEYS]

    # Prefixes of key families; a script appends the IP, host or priority.
    def families(self) -> dict[str, str]:
        return {name: self.key(name) + ":" for name in FAMILIES}

    def back_queue(self, ip: str, lane: int = 0) -> str:
        """Lane 0 keeps the pre-lane name, so a crawl queued before lanes resumes."""
        return self.key(f"bq:{ip}" if lane == 0 else f"bq:{ip}/{lane}")

    def ip_state(self, ip: str) -> str:
        return self.key(f"ip:{ip}")

    def recrawl_queue(self, ip: str) -> str:
        return self.key(f"rq:{ip}")

    def pages(self) -> list[PageKeys]:
        """Every page shard; unsharded, the one on the crawl's tag."""
        if self.page_shards == 1:
            return [self.legacy_pages]
        return [PageKeys(self.crawl, i, self.page_shards) for i in range(self.page_shards)]

    def page_of(self, name: str) -> PageKeys:
        """The page shard of a URL fingerprint or host name (crc32: stable everywhere)."""
        if self.page_shards == 1:
            return self.legacy_pages
        index = zlib.crc32(name.encode()) % self.page_shards
        return PageKeys(self.crawl, index, self.page_shards)

    @property
    def legacy_pages(self) -> PageKeys:
        """Where every crawl kept its per-page state before page shards."""
        return PageKeys(self.crawl)

    def front_queue(self, priority: int) -> str:
        return self.key(f"front:{priority}")

    def pending(self, host: str) -> str:
        return self.key(f"pending:{host}")

    def dns(self, host: str) -> str:
        return f"{self.page_of(host).prefix}:dns:{host}"

    def robots(self, origin: str) -> str:
        """An origin's verdict in its host's page shard (a glob "*://<host>*" finds a host's)."""
        return f"{self.page_of(origin_host(origin)).prefix}:robots:{origin}"

    @property
    def robots_errors(self) -> str:
        return f"{self.crawl_prefix}:robots_errors"

    @property
    def worker_stats(self) -> str:
        """Worker-side stats every worker adds to (HINCRBY; observe/shared_stats.py)."""
        return f"{self.crawl_prefix}:worker_stats"

    @property
    def blocklist(self) -> str:
        return f"{self.crawl_prefix}:blocklist"

    @property
    def shards(self) -> str:
        """The crawl's shard count (SET NX by its first worker or operator verb)."""
        return f"{self.crawl_prefix}:shards"

    @property
    def shard_tags(self) -> str:
        """SALTED_TAGS if the crawl's frontier shard tags are salted (MSETNX with G:shards)."""
        return f"{self.crawl_prefix}:shard_tags"

    @property
    def noise_counts(self) -> str:
        """Values and paths duplicates showed per "<host> <parameter>" (noise_evidence.py)."""
        return f"{self.crawl_prefix}:noise_counts"

    @property
    def noise_params(self) -> str:
        """Learned noise, "<host> <parameter>[=<value>]" (dropped at admission)."""
        return f"{self.crawl_prefix}:noise_params"

    @property
    def soft404(self) -> str:
        """Soft-404 probes: origin -> claim or fingerprint (HSETNX claims, one per crawl)."""
        return f"{self.crawl_prefix}:soft404"

    @property
    def neardup(self) -> str:
        """Key prefix of the crawl's simhash index (SimhashIndex appends its suffixes)."""
        return f"{self.crawl_prefix}:neardup2"

    def stats_keys(self) -> list[str]:
        return [self.key("stats")]

    def pattern(self) -> str:
        """Glob matching every key of this shard (the crawl's, unsharded)."""
        return f"{self.prefix}:*"


@dataclass(frozen=True)
class ShardedKeys:
    """The keys of a crawl whose frontier has `count` shards; `salted`: the tag scheme of
    a crawl created since salted shard tags (G:shard_tags), False for one created before."""

    crawl: str
    count: int = 1
    salted: bool = True

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"FRONTIER_SHARDS must be >= 1, not {self.count}")

    @classmethod
    def stored(cls, crawl: str, count: object, tags: object) -> ShardedKeys:
        """The keys of a crawl from its G:shards and G:shard_tags values as read (bytes,
        str or None; no count: one shard). A count without the marker is a crawl created
        before salted tags: it keeps its unsalted shard tags, where its queues are."""
        text = count.decode() if isinstance(count, bytes) else count
        marker = tags.decode() if isinstance(tags, bytes) else tags
        return cls(crawl, int(str(text or 1)), marker == SALTED_TAGS)

    @property
    def legacy_page_state(self) -> bool:
        """Whether per-page hashes (content hashes, templates, WARC originals) may still
        sit under the crawl's own tag: a sharded crawl created before salted tags (the
        same change moved those hashes to the page shards)."""
        return self.count > 1 and not self.salted

    def shard_tag(self, index: int) -> str | None:
        """The hash tag of frontier shard `index`, the one place it is built: None (the
        crawl's own) unsharded; salted like page shards (shard i in the i-th count-th of
        the slots, so a cluster's equal masters get equal shares: plain tags fell 3/4/5
        for 12 shards over three); `{<crawl>:s<i>}` for a crawl created before that."""
        if self.count == 1:
            return None
        if self.salted:
            return salted_tag(self.crawl, "s", index, self.count)
        return f"{self.crawl}:s{index}"

    @property
    def crawl_keys(self) -> FrontierKeys:
        """Crawl-wide keys (blocklist, DNS, robots...), and shard 0 when unsharded."""
        return FrontierKeys(self.crawl, page_shards=self.count)

    def shard(self, index: int) -> FrontierKeys:
        return FrontierKeys(self.crawl, self.shard_tag(index))

    def all(self) -> list[FrontierKeys]:
        return [self.shard(i) for i in range(self.count)]

    def index_of(self, name: str) -> int:
        """Shard of an IP, politeness key or host name: stable across processes (crc32,
        not hash()). A key "<ip>@<host>" lives with its IP: one address, one slot."""
        return zlib.crc32(name.partition("@")[0].encode()) % self.count

    def for_ip(self, ip: str) -> FrontierKeys:
        return self.shard(self.index_of(ip))

    def for_host(self, host: str) -> FrontierKeys:
        return self.shard(self.index_of(host))

    def stats_keys(self) -> list[str]:
        """The counters of every shard; a crawl's counters are their sum."""
        return [keys.key("stats") for keys in self.all()]

    def pattern(self) -> str:
        """Glob matching every key of the crawl, crawl-wide and of every shard."""
        return f"{KEY_ROOT}:{{{self.crawl}[}}:]*"


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
    "trap_hosts",
    "closed_patterns",
    "host_info",
    "paused",
    "paused_ips",
    "host_stats",
    "seen_bloom",
    "shapes",
    "ip_home",
)
FAMILIES = ("front", "bq", "rq", "ip", "pending", "doc", "bloom")
