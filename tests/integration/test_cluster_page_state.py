"""A crawl's keys on a real three-master Redis Cluster: a crawl of 3,000 pages
with the content pipeline, WARC output and re-crawl on leaves its per-page state (re-crawl
state, DNS and robots caches, content hashes, page templates, WARC originals: page shards)
and its frontier shards (salted tags, each with its Bloom bitmaps, most of the memory)
spread over the masters (state/keys.py), within 20% of each other in keys and MEMORY
USAGE bytes, per-page families alone and all keys together but the crawl's own tag. The
simhash index (~880 B per page) spreads too: its tables and sketches in the page shards,
only its commit ring (the last 256 adds, ~80 KB, simhash_keys.py) on the crawl's tag; before,
it was ~0.7 MB on one master here, which the Bloom filters' 25 MB per shard hid before
they grew with the crawl. `-s` prints every family per master."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from scripts.crawlrun import run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.redis_cluster import LocalCluster
from tests.integration.test_crawl_web import settings_for

# 3,000 pages, ~1,000 docs per master. Each doc lands on a master by crc32 of its URL
# fingerprint, a fair three-way draw: with 840 pages (40 x 20, before) the draw alone put
# max > 1.2 x min in ~3% of runs (multinomial, simulated; CI met [322, 247, 271] docs twice),
# with 3,000 in ~0.02%, so 20% measures the spread, not the draw. ~50 s, against 18 s.
HOSTS, PAGES = 60, 50
# Families kept per page or per host, and where a key's family name sits.
PER_PAGE = (
    *("doc", "dns", "robots", "recrawl_due", "recrawl_claims", "recrawl_rates"),
    *("content_hashes", "page_templates", "warc_records", "neardup2"),
)
# Families on the crawl's own tag, one slot ("web:" below): the simhash index's commit ring,
# soft-404 probes, the shard count and its tag marker, and nothing per page.
CRAWL_TAG = ("web:neardup2", "web:soft404", "web:shards", "web:shard_tags")
FAMILY = re.compile(rb"^crawlproj:\{([^}]*)\}:([a-z_0-9]+)")


def per_master(cluster: LocalCluster) -> list[dict[str, Counter[str]]]:
    """Per master: keys and MEMORY USAGE bytes of each key family of crawl "web"."""
    found = []
    for node in cluster.nodes():
        keys, size = Counter[str](), Counter[str]()
        for key in node.scan_iter(match="crawlproj:{web*", count=1000):
            match = FAMILY.match(key)
            family = "?" if not match else match.group(2).decode()
            if match and match.group(1) == b"web":
                family = f"web:{family}"
            keys[family] += 1
            size[family] += int(node.memory_usage(key, samples=0) or 0)
        found.append({"keys": keys, "bytes": size})
    return found


def total(counts: Counter[str], families: tuple[str, ...] | None = None) -> int:
    return sum(n for f, n in counts.items() if families is None or f in families)


def sharded(counts: Counter[str]) -> int:
    """Everything but the Bloom bitmaps (equal by construction) and the crawl's tag."""
    return sum(n for f, n in counts.items() if f not in (*CRAWL_TAG, "bloom"))


def test_per_page_state_spreads_over_the_masters(cluster: LocalCluster, tmp_path: Path) -> None:
    hosts = [HostSpec(f"h{i:02d}.test", pages=PAGES, validators=True) for i in range(HOSTS)]
    with TestWeb(WebSpec(hosts=hosts), lifetime=400) as web:
        seeds = write_seeds(tmp_path / "seeds.txt", web.seeds)
        warc = {"WARC_ENABLED": True, "WARC_URI": f"file://{tmp_path}/warc"}
        settings = settings_for(web, REDIS_URL=cluster.url, FRONTIER_DELAY=0.05, **warc)
        result = run_crawl(seeds, tmp_path / "data", settings, timeout=400)
        fetched = {r["url"] for r in web.requests() if r["status"] == 200}
    assert result.returncode == 0, result.log[-3000:]
    assert len(fetched) >= HOSTS * PAGES, result.log[-3000:]
    masters = per_master(cluster)
    for number, m in enumerate(masters):
        print(f"master {number}: keys {dict(m['keys'])} bytes {dict(m['bytes'])}")
    docs = [m["keys"]["doc"] for m in masters]
    assert sum(docs) >= HOSTS * PAGES, result.log[-6000:]  # one re-crawl state per stored page
    for what in ("keys", "bytes"):
        spread = [total(m[what], PER_PAGE) for m in masters]
        everything = [total(m[what]) - total(m[what], CRAWL_TAG) for m in masters]
        print(
            what, "per master, per-page families:", spread, "all but the crawl's tag:", everything
        )
        # A failure names every family's count per master: which one skewed.
        families = [dict(m[what]) for m in masters]
        assert max(spread) <= 1.2 * min(spread), (what, spread, families)
        assert max(everything) <= 1.2 * min(everything), (what, everything, families)
    rest = [sharded(m["bytes"]) for m in masters]
    print("bytes per master but Bloom bitmaps and the crawl's tag:", rest)
    assert max(rest) <= 1.2 * min(rest), rest
    # Salted frontier shard tags: 12 shards, 4 Bloom filters on every master.
    assert [m["keys"]["seen_bloom"] for m in masters] == [4, 4, 4]
    for family in ("robots", "content_hashes", "page_templates", "warc_records"):
        assert all(m["keys"][family] for m in masters), family  # (no DNS cache: hosts map)
    own_tag = {
        key.split(b"}:", 1)[1].decode()
        for node in cluster.nodes()
        for key in node.scan_iter(match="crawlproj:{web}:*")
    }
    # Nothing per page is written under the crawl's own tag any more: of the simhash
    # index only its commit ring, bounded whatever the crawl's size.
    families = {name.split(":", 1)[0] for name in own_tag}
    assert families.isdisjoint(set(PER_PAGE) - {"neardup2"}), own_tag
    assert {n for n in own_tag if n.startswith("neardup2")} == {
        "neardup2:recent",
        "neardup2:count",
    }, own_tag
    assert all(m["keys"]["neardup2"] for m in masters)
