"""CPU and peak RSS per page of `scrapy crawl web` on large real HTML, against stock Scrapy.

    .venv/bin/python bench/bench_cpu.py [--docs /usr/share/doc/python3.11/html] [--pages 1000]
                                        [--profile crawl.prof] [--without content,store]

The issue's complaint: on a real documentation site (pages ~18 KB and more) the crawler
cost ~13 ms of CPU per request against ~6 ms for stock Scrapy. This bench serves a folder
of real manuals (by default Debian's postgresql-doc-15: 1,169 pages of ~14 KB; --docs
/usr/share/doc/python3.11/html: ~93 KB pages; scripts/install-docs installs both)
from an HTTP server in this process on 127.0.31.9 and, in one run, crawls N pages of it:

1. `scrapy crawl web` (the project's settings, its default pipelines, FRONTIER_DELAY 0)
   with a redis-server of this bench's own (REDIS_URL), so the crawl process and Redis
   are measured apart: the crawl's user+sys and peak RSS from os.wait4 on its PID,
   Redis's from INFO cpu before and after.
2. stock Scrapy: a plain CrawlSpider (bench/_stock_spider.py) run with `scrapy
   runspider` outside the project, with Scrapy's default settings and pipeline.

Both stop after N responses (CLOSESPIDER_PAGECOUNT) or when the manual is done; ms/page
is CPU over the responses the server answered, and "marginal" takes off the start-up
cost (imports, Redis scripts) measured by a --small crawl first. Then the content stages
are replayed in this process over the docs' files (the checkout this file is in: copy it
into an older tree to measure that one).

--without NAME,... adds, in the same run, a project crawl per name with that item pipeline
left out (content, soft404, store, warc, recrawl: a pipeline whose dotted path holds
".NAME."; "all" leaves out every one but the row's): what each pipeline costs a page.

--profile runs the project crawl under py-spy (`.venv/bin/pip install py-spy`): samples
of every thread holding the GIL, attributed to the crawl's stages by the deepest frame
of a stage's code (STAGES). Its own CPU is counted in the crawl's, so read the shares
from it and the figures from a run without it.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOISE_NOTE, ROOT, redis_server, table

from crawlproj import settings as project_settings
from crawlproj.items import PageItem
from scripts.crawlrun import SCRAPY, crawl_command

ADDRESS = "127.0.31.9"
HOST = "docs.example"  # not *.test: the test web's example extractor would run on it
STOCK = Path(__file__).resolve().parent / "_stock_spider.py"


class _CountingHandler(SimpleHTTPRequestHandler):
    served: list[int] = []  # one entry per answered request (list.append is atomic)

    def log_message(self, *args: Any) -> None:
        self.served.append(1)


@contextmanager
def docs_server(root: Path) -> Iterator[tuple[int, list[int]]]:
    served: list[int] = []
    handler = type("Handler", (_CountingHandler,), {"served": served})
    server = ThreadingHTTPServer((ADDRESS, 0), functools.partial(handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], served
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Run:
    label: str
    pages: int
    cpu_s: float
    rss_mib: float
    redis_cpu_s: float
    returncode: int


def _wait(cmd: list[str], cwd: Path, log: Path) -> tuple[int, Any]:
    """Run `cmd`, its output to `log`; (returncode, the process's own rusage) from wait4,
    so the bench's HTTP server and Redis are not counted."""
    with log.open("w") as out:
        child = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=out)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, usage


def _redis_cpu(url: str) -> float:
    info = redis.Redis.from_url(url).info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def pipelines_without(name: str) -> dict[str, int]:
    """The project's ITEM_PIPELINES (this checkout's settings) without the named one(s):
    a -s ITEM_PIPELINES replaces the whole dict, so the rest is passed again."""
    pipelines = project_settings.ITEM_PIPELINES.items()
    if name == "all":
        return {path: order for path, order in pipelines if ".metadata." in path}
    return {path: order for path, order in pipelines if f".{name}." not in path}


def crawl_project(
    url: str, pages: int, work: Path, profile: str | None, project: Path, without: str = ""
) -> Run:
    settings: dict[str, Any] = {
        "DNS_HOSTS_MAP": {HOST: ADDRESS},
        "FRONTIER_DELAY": 0,
        "CLOSESPIDER_PAGECOUNT": pages,
        "URL_BLOCKLIST": r"re:/_sources/|\.txt$",
        "FRONTIER_DNS_RETRIES": 0,
    }
    if without:
        settings["ITEM_PIPELINES"] = pipelines_without(without)
    with docs_server(ROOT_DOCS) as (port, served), redis_server(work / "redis") as redis_url:
        settings["REDIS_URL"] = redis_url
        seeds = url.format(host=HOST, port=port)
        cmd = crawl_command(seeds, work / "data", settings, work / "items.jsonl")
        if profile:
            # Every thread (the pipelines hash and store in pools), not just the reactor's.
            spy = [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--gil",
                "-f",
                "raw",
                "-r",
                "200",
            ]
            cmd = [*spy, "-o", profile, "--", *cmd]
        before = _redis_cpu(redis_url)
        rc, usage = _wait(cmd, project, work / "crawl.log")
        redis_cpu = _redis_cpu(redis_url) - before
        return Run(
            f"crawl web without {without}" if without else "crawl web",
            len(served),
            usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss / 1024,
            redis_cpu,
            rc,
        )


def crawl_stock(url: str, pages: int, work: Path) -> Run:
    with docs_server(ROOT_DOCS) as (port, served):
        spec = work / "web.json"
        spec.write_text(
            json.dumps({"seeds": [url.format(host=ADDRESS, port=port)], "hosts": [ADDRESS]})
        )
        cmd = [
            *SCRAPY,
            "runspider",
            str(STOCK),
            "-a",
            f"web={spec}",
            "-s",
            f"CLOSESPIDER_PAGECOUNT={pages}",
            "-s",
            "LOG_LEVEL=INFO",
        ]
        rc, usage = _wait(cmd, work, work / "stock.log")
        return Run(
            "stock Scrapy",
            len(served),
            usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss / 1024,
            0.0,
            rc,
        )


ROOT_DOCS = Path("/usr/share/doc/postgresql-doc-15/html")


# Stage of a sample: the deepest frame whose file matches (first pattern wins per frame).
STAGES = (
    ("frontier", ("extensions/frontier/", "extensions/admission/", "extensions/state/")),
    ("robots/DNS", ("extensions/robots/", "extensions/dns/", "extensions/fetch/")),
    (
        "parse and links",
        (
            "crawlproj/links.py",
            "crawlproj/directives.py",
            "crawlproj/extractors/",
            "crawlproj/spiders/",
            "parsel/",
            "scrapy/http/response/text.py",
        ),
    ),
    (
        "text + fingerprint",
        ("extensions/content/", "crawlproj/pipelines/content.py", "crawlproj/pipelines/soft404.py"),
    ),
    (
        "hash + compress + store",
        (
            "extensions/pagestore/",
            "crawlproj/pipelines/store.py",
            "crawlproj/pipelines/warc.py",
            "crawlproj/checkpoint.py",
        ),
    ),
    (
        "rows",
        (
            "crawlproj/pipelines/metadata.py",
            "crawlproj/pipelines/recrawl.py",
            "extensions/recrawl/",
            "scrapy/extensions/feedexport.py",
            "scrapy/exporters.py",
        ),
    ),
    ("scrapy download", ("scrapy/core/downloader/", "twisted/web/")),
)


def stage_of(stack: str) -> str:
    if "_find_and_load" in stack:
        # Imports (boto3 under the S3 page store, Scrapy's TLS factories...) are start-up,
        # which the marginal figure takes off: left in, they moved a stage's share by 3
        # points between two runs.
        return START_UP
    for frame in reversed(stack.split(";")):
        for stage, patterns in STAGES:
            if any(p in frame for p in patterns):
                return stage
    return "scrapy engine, reactor, other"


START_UP = "start-up (imports)"


def stage_shares(raw: Path) -> dict[str, float]:
    """Share of the per-page samples per stage from a py-spy raw (collapsed stacks)
    file; start-up imports left out (their share of all samples under START_UP)."""
    counts: dict[str, int] = {}
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack:
            counts[stage_of(stack)] = counts.get(stage_of(stack), 0) + int(n)
    start_up = counts.pop(START_UP, 0)
    total = sum(counts.values()) or 1
    if start_up:
        print(f"{START_UP}: {start_up / (total + start_up):.1%} of the samples, left out")
    return {stage: n / total for stage, n in sorted(counts.items(), key=lambda kv: -kv[1])}


def replay_stages(docs: Path, n: int) -> dict[str, float]:
    """CPU ms per page of the content stages, run in this process on the docs' files
    (the crawl's own functions, no profiler): a profile-free split of the crawl's figure."""
    import scrapy
    from scrapy.http import HtmlResponse

    from crawlproj.pipelines.metadata import finalise_row
    from crawlproj.pipelines.signature import content_signature
    from crawlproj.spiders.page_parse import follow_links, parse_page
    from extensions.pagestore.protocol import content_key, pack_body

    files = sorted(docs.rglob("*.html"))[:n]
    pages = [HtmlResponse(f"http://{HOST}/{f.name}", body=f.read_bytes()) for f in files]

    def parse(r: HtmlResponse) -> object:
        return [scrapy.Request(u) for u in follow_links(parse_page(r, "crawlproj"), r)]

    def rows(r: HtmlResponse) -> object:
        return json.dumps(dict(finalise_row(PageItem(url=r.url, status=200))))

    stages = {
        "parse and links": parse,
        "text + fingerprint": lambda r: content_signature(r, "text/html"),
        "hash + compress (store)": lambda r: (content_key(r.body), pack_body(r.body)),
        "rows (finalise + JSON)": rows,
    }
    result = {}
    for name, stage in stages.items():
        started = time.process_time()
        for response in pages:
            stage(response)
        result[name] = 1000 * (time.process_time() - started) / max(len(pages), 1)
    return result


def report(runs: list[Run], small: list[Run]) -> None:
    rows = []
    for run, short in zip(runs, small, strict=True):
        marginal = (run.cpu_s - short.cpu_s) / max(run.pages - short.pages, 1)
        rows.append(
            [
                run.label,
                run.pages,
                f"{run.cpu_s:.1f}",
                f"{1000 * run.cpu_s / max(run.pages, 1):.2f}",
                f"{1000 * marginal:.2f}",
                f"{1000 * run.redis_cpu_s / max(run.pages, 1):.2f}",
                f"{short.rss_mib:.0f} / {run.rss_mib:.0f}",
                run.returncode,
            ]
        )
    headers = ["crawl", "pages", "cpu s", "ms/page", "marginal ms/page", "redis ms/page"]
    print(table([*headers, f"peak RSS MiB ({small[0].pages} / all)", "rc"], rows))
    stock = runs[1]
    for ours in (runs[0], *runs[2:]):
        ratio = (ours.cpu_s / max(ours.pages, 1)) / (stock.cpu_s / max(stock.pages, 1))
        print(f"{ours.label} / stock Scrapy CPU per page: {ratio:.2f}x")
    print(f"(marginal: CPU of {runs[0].pages} pages minus a {small[0].pages}-page crawl's)")


def main() -> None:
    global ROOT_DOCS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=ROOT_DOCS)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--small", type=int, default=20, help="pages of the start-up cost run")
    parser.add_argument(
        "--project", type=Path, default=ROOT, help="a checkout to crawl with (e.g. an older commit)"
    )
    parser.add_argument("--profile", default=None, help="py-spy raw samples of the project crawl")
    parser.add_argument(
        "--without",
        type=lambda text: [name for name in text.split(",") if name],
        default=[],
        help="also crawl without these item pipelines, one crawl each (content,store,...)",
    )
    args = parser.parse_args()
    for name in args.without:
        if name != "all" and len(pipelines_without(name)) == len(project_settings.ITEM_PIPELINES):
            parser.error(f"--without {name}: no item pipeline of the project is named so")
    ROOT_DOCS = args.docs
    url = "http://{host}:{port}/index.html"
    runs: list[Run] = []
    small: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
        for n, into in ((args.small, small), (args.pages, runs)):
            work = Path(tmp) / str(n)
            (work / "p").mkdir(parents=True)
            (work / "s").mkdir()
            profile = args.profile if into is runs else None
            into.append(crawl_project(url, n, work / "p", profile, args.project))
            into.append(crawl_stock(url, n, work / "s"))
            for name in args.without:
                (work / name).mkdir()
                into.append(crawl_project(url, n, work / name, None, args.project, name))
    report(runs, small)
    stages = replay_stages(ROOT_DOCS, args.pages)
    print(
        table(
            ["stage (in-process replay)", "ms/page"], [[k, f"{v:.2f}"] for k, v in stages.items()]
        )
    )
    if args.profile:
        # Shares of the per-page samples, applied to the per-page (marginal) CPU.
        ours, short = runs[0], small[0]
        per_page = 1000 * (ours.cpu_s - short.cpu_s) / max(ours.pages - short.pages, 1)
        shares = stage_shares(Path(args.profile))
        rows = [[k, f"{v:.1%}", f"{v * per_page:.2f}"] for k, v in shares.items()]
        print(table(["stage (py-spy samples)", "share", "marginal ms/page"], rows))
    print(NOISE_NOTE)


if __name__ == "__main__":
    main()
