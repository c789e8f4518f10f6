"""Cost of the content path (duplicate checks, page store, metadata rows), run by hand.

    .venv/bin/python bench/bench_content.py [--pages 2000] [--hosts 40 --per-host 25 --repeats 3]

1. Per-page cost on ~10 KB HTML pages (corpus prose): main text, signature
   (simhash + sketch + text hash), content_hash, the whole duplicate check
   against a real redis-server (this bench's own, loopback, dies with the
   bench), gzip + sha256 for the store, and the three pipelines end to end
   (file store, real Redis) driven like a crawl drives them: fingerprints/s and
   CPU ms per page.
2. A crawl of the test web with and without the content pipelines (the same
   `scrapy crawl web`, -s ITEM_PIPELINES={} for "without"), alternating, median of
   the repeats: CPU seconds of the crawl (crawler + its embedded Redis) and the
   pipelines' added CPU per page as a share of the crawl's.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, crawl, table

from crawlproj.checkpoint import checkpoint_for
from crawlproj.pipelines.content import ContentDedupPipeline
from crawlproj.pipelines.metadata import MetadataPipeline
from crawlproj.pipelines.signature import content_signature
from crawlproj.pipelines.store import PageStorePipeline
from crawlproj.spiders.page_parse import parse_page
from crawlproj.spiders.web import WebSpider
from extensions.content.fingerprint import content_hash, signature
from extensions.content.main_text import page_text
from extensions.pagestore.protocol import content_key, pack_body
from extensions.state.connection import EmbeddedRedis, find_redis_server, redis_lifecycle
from scripts.testweb import WebSpec
from tests.corpus.neardup_corpus import paragraph_stream

PAGE_BYTES = 10 * 1024


def ten_kb_pages(seed: int = 7) -> list[bytes]:
    """Distinct ~10 KB pages: consecutive corpus paragraphs (a coherent text, like
    an article; random mixtures of paragraphs all look like the corpus average and
    sit closer together than real pages do), each run used once, in a site's chrome."""
    paragraphs = paragraph_stream()
    pages: list[bytes] = []
    start = 0
    while start < len(paragraphs):
        i = len(pages)
        parts = [
            "<!DOCTYPE html><html><head><meta charset='utf-8'>",
            f"<title>Page {i}</title><script>var x = {i};</script></head><body>",
            "<header><a href='/'>Site</a></header><nav><a href='/a'>A</a></nav>",
            f"<main><h1>Page {i}</h1>",
        ]
        size = sum(map(len, parts))
        while size < PAGE_BYTES - 200 and start < len(paragraphs):
            parts.append(f"<p>{html.escape(paragraphs[start])}</p>")
            size += len(parts[-1])
            start += 1
        if size < PAGE_BYTES - 200:
            break
        parts.append("</main><footer>&copy; Site</footer></body></html>")
        pages.append("".join(parts).encode())
    random.Random(seed).shuffle(pages)
    return pages


def per_call(func: Callable[[bytes], Any], pages: list[bytes]) -> tuple[float, float]:
    """(calls/s, CPU ms per call) over all pages."""
    wall, cpu = time.perf_counter(), time.process_time()
    for page in pages:
        func(page)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return len(pages) / wall, 1000 * cpu / len(pages)


def make_harness(redis_url: str, store_dir: Path) -> tuple[Any, list[Any]]:
    from scrapy.utils.test import get_crawler

    settings = {
        "REDIS_URL": redis_url,
        "FRONTIER_CRAWL_NAME": f"bench{uuid.uuid4().hex[:6]}",
        "PAGESTORE_URI": f"file://{store_dir}",
    }
    crawler = get_crawler(WebSpider, settings)
    crawler.spider = WebSpider.from_crawler(crawler, seeds="http://bench.test/")
    pipelines = [
        ContentDedupPipeline.from_crawler(crawler),
        PageStorePipeline.from_crawler(crawler),
        MetadataPipeline.from_crawler(crawler),
    ]
    return crawler, pipelines


async def drive(
    crawler: Any, pipelines: list[Any], responses: list[Any], width: int
) -> tuple[float, float]:
    """(wall s, CPU s) of the items going through the three pipelines, `width` at a
    time (like CONCURRENT_ITEMS); the spider's part (page_item, parse_page) and the
    pipelines' open/close are not timed."""
    checkpoint = checkpoint_for(crawler)
    for pipeline in pipelines:
        if hasattr(pipeline, "open_spider"):
            await pipeline.open_spider()
    items = []
    for response in responses:
        item = crawler.spider.page_item(response)
        item.update(parse_page(response, "crawlproj").fields)
        checkpoint.register(item, response)
        items.append(item)

    async def one(item: Any) -> None:
        for pipeline in pipelines:
            item = await pipeline.process_item(item)
        await checkpoint.wait(item)

    t0, c0 = time.perf_counter(), time.process_time()
    for start in range(0, len(items), width):
        await asyncio.gather(*(one(item) for item in items[start : start + width]))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    for pipeline in pipelines:
        if hasattr(pipeline, "close_spider"):
            await pipeline.close_spider()
    return wall, cpu


def pipeline_throughput(
    redis_url: str, pages: list[bytes], n: int, tmp: Path
) -> tuple[float, float, dict[str, int]]:
    """n pages through the pipelines: rounds over the distinct pages, each round a
    fresh crawl (own index and hashes), so every page is new to its crawl."""
    from scrapy.http import HtmlResponse, Request

    outcomes: dict[str, int] = {}
    wall = cpu = 0.0
    done = 0
    while done < n:
        batch = pages[: n - done]
        responses = [
            HtmlResponse(url, body=body, encoding="utf-8", request=Request(url))
            for url, body in ((f"http://bench.test/p/{i}", b) for i, b in enumerate(batch))
        ]
        crawler, pipelines = make_harness(redis_url, tmp / f"pages-{done}")
        round_wall, round_cpu = asyncio.run(drive(crawler, pipelines, responses, width=64))
        wall, cpu = wall + round_wall, cpu + round_cpu
        redis_lifecycle(crawler).close()
        for key, value in crawler.stats.get_stats().items():
            if key.startswith(("content/", "pagestore/")):
                outcomes[key] = outcomes.get(key, 0) + value
        done += len(batch)
    return n / wall, 1000 * cpu / n, outcomes


def part_one(n: int, tmp: Path) -> None:
    distinct = ten_kb_pages()
    pages = [distinct[i % len(distinct)] for i in range(n)]
    mean_kb = statistics.mean(len(p) for p in distinct) / 1024
    texts = [page_text(p).text for p in pages]
    from scrapy.http import HtmlResponse

    responses = [HtmlResponse("http://b.test/", body=p, encoding="utf-8") for p in pages]
    rows = []
    for name, func, items in [
        ("main text", page_text, pages),
        ("signature (text given)", signature, texts),
        ("content_hash", content_hash, pages),
        ("content_signature (all three)", lambda r: content_signature(r, "text/html"), responses),
        ("gzip + sha256 key (store prep)", lambda p: (content_key(p), pack_body(p)), pages),
        ("parse_page (directives, extractors)", lambda r: parse_page(r, "x"), responses),
    ]:
        rate, ms = per_call(func, items)  # type: ignore[arg-type]
        rows.append([name, f"{rate:,.0f}", f"{ms:.3f}"])
    server = EmbeddedRedis(data_dir=tmp / "redis", binary=find_redis_server())
    server.start()  # loopback, dies with this process (PR_SET_PDEATHSIG)
    try:
        rate, ms, outcomes = pipeline_throughput(server.url, distinct, n, tmp)
    finally:
        server.stop()
    rows.append(["3 pipelines, real Redis + file store", f"{rate:,.0f}", f"{ms:.3f}"])
    print(f"== Per page: {n} pages of {mean_kb:.1f} KB ({len(distinct)} distinct, corpus prose) ==")
    print(table(["step", "pages/s", "CPU ms/page"], rows))
    print(
        "  the pipelines' CPU includes thread hand-offs, Redis round trips (client side), "
        f"gzip and the file writes; outcomes: {outcomes}"
    )


def part_two(args: argparse.Namespace, tmp: Path) -> None:
    spec = WebSpec.many(args.hosts, args.per_host)
    common = {"FRONTIER_DELAY": 0, "CONCURRENT_REQUESTS": 64, "CLOSESPIDER_TIMEOUT": 300}
    configs = {"without": {**common, "ITEM_PIPELINES": {}}, "with": common}
    runs: dict[str, list[Any]] = {name: [] for name in configs}
    for rep in range(args.repeats):
        for name in configs if rep % 2 == 0 else list(reversed(configs)):
            run = crawl(name, spec, tmp / f"{name}-{rep}", configs[name], timeout=420)
            runs[name].append(run)
            print(
                f"  run {rep + 1} {name:7s}: rc {run.returncode}, {run.items} rows, "
                f"{run.wall_s:.1f}s wall, {run.cpu_s:.2f}s CPU",
                flush=True,
            )
    med = {name: statistics.median(r.cpu_s for r in rs) for name, rs in runs.items()}
    rows_n = statistics.median(r.items for r in runs["with"])
    added_ms = 1000 * (med["with"] - med["without"]) / rows_n
    print(f"== Crawl of the test web: {args.hosts} hosts x {args.per_host} pages, delay 0 ==")
    print(
        table(
            ["content pipelines", "CPU s (median)", "rows", "CPU ms/row"],
            [
                [n, f"{med[n]:.2f}", f"{rows_n:.0f}", f"{1000 * med[n] / rows_n:.2f}"]
                for n in configs
            ],
        )
    )
    share = (med["with"] - med["without"]) / med["with"]
    print(f"  added by the pipelines: {added_ms:.2f} CPU ms/page = {share:.1%} of the crawl's CPU")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000, help="10 KB pages for part 1")
    parser.add_argument("--hosts", type=int, default=40, help="test web hosts for part 2")
    parser.add_argument("--per-host", type=int, default=25, help="pages per host")
    parser.add_argument("--repeats", type=int, default=3, help="crawls per configuration")
    parser.add_argument("--skip-crawl", action="store_true", help="part 1 only")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-content-"))
    print(f"bench_content: outputs in {tmp}")
    print(NOISE_NOTE)
    part_one(args.pages, tmp)
    if not args.skip_crawl:
        part_two(args, tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
