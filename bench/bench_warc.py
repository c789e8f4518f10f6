"""Cost of WARC output (issue 14), run by hand.

    .venv/bin/python bench/bench_warc.py [--hosts 8 --per-host 30 --repeats 3]

1. Write cost alone: the records of one fetch (response + request, ~10 KB HTML page of
   the test web) built and gzip-written into a file, in this process: CPU ms per page.
2. A crawl of the test web with and without WARC_ENABLED (the same `scrapy crawl web`,
   alternating, median of the repeats): CPU seconds of the crawl (crawler + its embedded
   Redis) per page, and bytes on disk per page: WARC files (+ their CDXJ indexes) vs the
   page store's gzip bodies of the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, crawl, table
from scrapy.http import HtmlResponse, Request

from crawlproj.items import PageItem
from crawlproj.pipelines.warc import exchange_of
from extensions.warc.files import OpenWarc
from extensions.warc.records import exchange_records
from scripts.testweb import HostSpec, WebSpec
from tests.corpus.neardup_corpus import paragraph_stream

PAGE_BYTES = 10 * 1024


def sample_pages(n: int) -> list[bytes]:
    paragraphs = paragraph_stream()
    pages = []
    for i in range(n):
        text, j = "", i
        while len(text) < PAGE_BYTES:
            text += f"<p>{paragraphs[j % len(paragraphs)]}</p>\n"
            j += 7
        pages.append(f"<html><body><h1>Page {i}</h1>{text}</body></html>".encode())
    return pages


def write_cost(n: int, workdir: Path) -> tuple[float, float]:
    """(CPU ms per page, bytes written per page) of building and writing the records."""
    pages = sample_pages(n)
    warc = OpenWarc.create(workdir, "bench-0-00000-w.warc.gz")
    started = time.process_time()
    for i, body in enumerate(pages):
        url = f"http://bench.test/page/{i}"
        request = Request(url, meta={"frontier_ip": "127.0.0.1"})
        headers = {"Content-Type": "text/html; charset=utf-8"}
        response = HtmlResponse(url, body=body, headers=headers, request=request)
        item = PageItem(url=url, final_url=url, status=200, content_type="text/html")
        item["fetched_at"] = "2026-12-01T10:00:00.000+00:00"
        warc.write(exchange_records(warc.writer, exchange_of(item, response), None))
    cpu_ms = (time.process_time() - started) * 1000 / n
    size = warc.size
    warc.release()
    return cpu_ms, size / n


def folder_bytes(folder: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in folder.rglob(pattern)) if folder.is_dir() else 0


def crawl_once(label: str, spec: WebSpec, out: Path, warc: bool) -> dict[str, Any]:
    settings = {"FRONTIER_DELAY": 0.01, "WARC_ENABLED": warc, "WARC_MAX_SIZE": 4 * 1024**2}
    run = crawl(label, spec, out, settings, timeout=600)
    if run.returncode != 0:
        raise SystemExit(f"{label}: crawl failed ({run.returncode}): {run.log_tail}")
    data = out / "data"
    return {
        "rows": run.items,
        "cpu": run.cpu_s,
        "store": folder_bytes(data / "pages", "*.gz"),
        "warc": folder_bytes(data / "warc", "*.warc.gz"),
        "cdxj": folder_bytes(data / "warc", "*.cdxj"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--per-host", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-warc-") as tmp:
        cpu_ms, written = write_cost(args.pages, Path(tmp))
        print(f"records of one ~10 KB page: {cpu_ms:.3f} CPU ms, {written:.0f} bytes written")
        spec = WebSpec(
            hosts=[HostSpec(f"w{i}.test", pages=args.per_host) for i in range(args.hosts)]
        )
        runs: dict[str, list[dict[str, Any]]] = {"without": [], "with": []}
        for repeat in range(args.repeats):
            for label in runs:
                out = Path(tmp) / f"{label}-{repeat}"
                runs[label].append(crawl_once(label, spec, out, label == "with"))
    rows = []
    for label, results in runs.items():
        pages = statistics.median(r["rows"] for r in results)
        rows.append(
            [
                f"WARC_ENABLED {label == 'with'}",
                f"{pages:.0f}",
                f"{statistics.median(r['cpu'] * 1000 / r['rows'] for r in results):.1f}",
                f"{statistics.median(r['store'] / r['rows'] for r in results):.0f}",
                f"{statistics.median(r['warc'] / r['rows'] for r in results):.0f}",
                f"{statistics.median(r['cdxj'] / r['rows'] for r in results):.0f}",
            ]
        )
    headers = ["run", "rows", "CPU ms/page", "store B/page", "WARC B/page", "CDXJ B/page"]
    print(table(headers, rows))
    print(NOISE_NOTE)


if __name__ == "__main__":
    main()
