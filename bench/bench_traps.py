"""Crawl budget on the trap-laden test web (issue #12): how much of one request budget a
crawler spends on real pages, for ours, stock Scrapy and ours before the crawl-budget work.

Run by hand from the project root (one crawl at a time, ~2-4 min each):

    .venv/bin/python bench/bench_traps.py [--runs ours,stock,before] [--repeats 1]
        [--budget-factor 4] [--time-cap 240] [--before-commit e0bb675 | --before-root DIR]
        [--web traps | holdout | dealt:SEED] [--delay 0] [--trap-prose 0] [--canonical-links]
        [--soft404-style STYLE] [--calendar-style STYLE] [--generators STYLES]
        [--redirect-traps STYLES] [--alternates STYLES]

- ours: `scrapy crawl web` in this checkout (FRONTIER_DELAY 0 unless --delay: loopback,
  no DNS retries).
- stock: `_stock_spider.py` (CrawlSpider + LinkExtractor, ROBOTSTXT_OBEY, DOWNLOAD_DELAY 0)
  by `scrapy runspider` outside the project. Its only borrowed part is name resolution:
  TWISTED_DNS_RESOLVER = our HostsMapResolver, so the web's names reach 127.x.
- before: `scrapy crawl web` in a git worktree of --before-commit (FIFO front queues),
  same virtualenv, same settings.

--web holdout crawls WebSpec.traps_holdout() instead: the same trap families dealt out
to other hosts, sizes and a seed, a web no threshold was chosen on. --web dealt:SEED
crawls a web dealt at random from those families (scripts/testweb/dealt.py): one more
web per seed, none looked at before it is run. --trap-prose N gives every calendar,
facet, growth, long-URL and /trap/ page N words of its own (WebSpec.trap_prose), as real
ones list their own events or products: no two are template copies or near duplicates
then, so content feedback cannot judge them and only the URL rules and budgets can.
--canonical-links makes every host name each page's canonical URL (HostSpec
.canonical_links: a filter page its listing, a session copy its token-free page).
--soft404-style STYLE gives every soft-404 host that style (e.g. chatty: each answer
adds words of its own to the host's not-found template), --calendar-style STYLE every
calendar host that one calendar (e.g. months: /calendar/2024/jan/). --redirect-traps
tokens,counter,... gives the same hosts endless redirect chains (HostSpec.redirect_traps,
scripts/testweb/redirects.py). --alternates replytocom,print,share,history gives every
host's real pages those alternate views (HostSpec.alternates,
scripts/testweb/alternates.py: reply links per comment, print views, share buttons, a
wiki's edit and history tabs). --deal-styles (with
--web dealt:SEED) deals these options from the seed too, each family on a coin toss, and
prints them. --generators
slugs,ids,... gives every host of 20 pages or more those generator traps (HostSpec
.generators, scripts/testweb/generator.py: tarpits of unique pages, each linking new ones
only), which no duplicate or template test can catch: only budgets hold them.

Traps never run dry, so every run gets the same caps: CLOSESPIDER_PAGECOUNT = budget-factor
x the web's real pages and CLOSESPIDER_TIMEOUT = time-cap; a run that hits one did not
end by itself. Every figure comes from the test web's request log (robots.txt left out)
and its oracle (Site.real_pages / is_trap / is_non_page): coverage = real pages served
200 / real pages; shares = requests of that kind / requests; time to 90% = the start of
the request that brought coverage to 90%, minus the start of the crawl's first request.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import NOISE_NOTE, table  # noqa: E402
from bench._trap_report import (  # noqa: E402
    RUNS,
    TrapRun,
    kinds_table,
    measure,
    ratio_rows,
    unjudged_lines,
    unjudged_requests,
)
from bench._trap_webs import (  # noqa: E402
    alternate_styles,
    deal_styles,
    generator_styles,
    redirect_trap_styles,
    restyled,
    web_spec,
)
from scripts.crawlrun import crawl_command, write_seeds  # noqa: E402
from scripts.testweb import TestWeb  # noqa: E402

BEFORE_COMMIT = "e0bb675"  # the last commit before the crawl-budget work (issue #12)
KILL_GRACE_S = 60.0  # past the time cap: the graceful close gets this long, then a kill
HEADERS = (
    "run",
    "requests",
    "real coverage",
    "trap share",
    "non-page share",
    "time to 90% real",
    "ended by itself",
)


Launch = tuple[list[str], Path, dict[str, str]]  # command, cwd, environment


@dataclass
class Caps:
    pages: int
    time_s: float
    delay: float = 0.0  # ours: FRONTIER_DELAY (--delay)

    def settings(self) -> dict[str, Any]:
        return {"CLOSESPIDER_PAGECOUNT": self.pages, "CLOSESPIDER_TIMEOUT": self.time_s}


def ended_by_itself(log: str, killed: bool, caps: Caps) -> str:
    """'yes' when Scrapy closed the spider as finished, else which cap stopped it."""
    found = re.findall(r"'finish_reason': '([a-z_]+)'", log)
    reason = found[-1] if found else None
    if reason == "finished":
        return "yes"
    if reason == "closespider_pagecount":
        return f"no (cap {caps.pages} pages)"
    if reason == "closespider_timeout":
        return f"no (cap {caps.time_s:.0f} s)"
    return "no (killed)" if killed else f"no ({reason or 'no stats: see crawl.log'})"


# ---- the three crawlers -------------------------------------------------------------


def _env(pythonpath: Path | None = None) -> dict[str, str]:
    # Nothing of the caller's Scrapy project leaks in: each run's cwd picks its project.
    env = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "PYTHONPATH")}
    env["PYTHONUNBUFFERED"] = "1"
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def ours_launch(web: TestWeb, out: Path, caps: Caps, root: Path) -> Launch:
    """`scrapy crawl web` in `root` (this checkout or the before worktree)."""
    seeds = write_seeds(out / "seeds.txt", web.seeds)
    settings = {
        "DNS_HOSTS_MAP": web.hosts_map_setting(),
        # Loopback: by default politeness would only measure the delay. --delay shows
        # what the verdicts' lag costs at 0 (feedback arrives before the next fetch).
        "FRONTIER_DELAY": caps.delay,
        "FRONTIER_DNS_RETRIES": 0,
        **caps.settings(),
    }
    return crawl_command(seeds, out / "data", settings, out / "items.jsonl"), root, _env()


def stock_launch(web: TestWeb, out: Path, caps: Caps, _root: Path) -> Launch:
    """`scrapy runspider _stock_spider.py` from `out`: no scrapy.cfg above it, so no
    project settings; PYTHONPATH only makes our resolver class importable."""
    spec = out / "web.json"
    spec.write_text(json.dumps({"seeds": web.seeds, "hosts": sorted(web.hosts)}))
    settings: dict[str, Any] = {
        "TWISTED_DNS_RESOLVER": "extensions.dns.resolver.HostsMapResolver",
        "DNS_HOSTS_MAP": web.hosts_map_setting(),
        "DNS_HOSTS_MAP_ONLY": True,
        "DNS_ALLOWED_NETWORKS": "127.0.0.0/8",
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": 0,
        "TELNETCONSOLE_ENABLED": False,  # no listening port: not part of the crawl
        "LOG_LEVEL": "INFO",
        **caps.settings(),
    }
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(ROOT / "bench" / "_stock_spider.py")]
    cmd += ["-a", f"web={spec}"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={json.dumps(value) if isinstance(value, dict) else value}"]
    return cmd, out, _env(pythonpath=ROOT)


Launcher = Callable[[TestWeb, Path, Caps, Path], Launch]
LAUNCHERS: dict[str, Launcher] = {"ours": ours_launch, "stock": stock_launch, "before": ours_launch}


def launch(cmd: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float) -> bool:
    """Run one crawl, its output in `log`; True when it outlived `timeout` and was killed."""
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT)
        try:
            proc.wait(timeout=timeout)
            return False
        except subprocess.TimeoutExpired:
            proc.kill()  # our own child, by its PID; its embedded Redis dies with it
            proc.wait()
            return True


def run_one(label: str, name: str, args: argparse.Namespace, paths: tuple[Path, Path]) -> TrapRun:
    """One crawl by `label` against a fresh trap web; paths = (its output folder, the
    before tree's root)."""
    out, before = paths
    out.mkdir(parents=True)
    lifetime = args.time_cap + 2 * KILL_GRACE_S
    spec = restyled(web_spec(args.web), args)
    with TestWeb(spec, out / "requests.jsonl", lifetime) as web:
        real = set(web.real_pages())
        caps = Caps(args.budget_factor * len(real), args.time_cap, args.delay)
        root = before if label == "before" else ROOT
        cmd, cwd, env = LAUNCHERS[label](web, out, caps, root)
        started = time.monotonic()
        killed = launch(cmd, cwd, env, out / "crawl.log", args.time_cap + KILL_GRACE_S)
        wall = time.monotonic() - started
        records = [r for r in web.requests() if r["path"] != "/robots.txt"]
        figures = measure(records, real, web.is_trap, web.is_non_page)
        each = [web.site.kind(r["url"]) for r in records]
        kinds = Counter(each)
        unjudged = unjudged_requests(records, each, web.site, real)
    log = (out / "crawl.log").read_text(errors="replace")
    ended = ended_by_itself(log, killed, caps)
    result = TrapRun(label, name, *figures, ended, wall, kinds, unjudged)
    if result.requests == 0:
        print(f"  {label}: no request reached the web; log tail:\n{log[-3000:]}")
    return result


@contextlib.contextmanager
def before_checkout(args: argparse.Namespace) -> Iterator[Path]:
    """The before tree: --before-root as given, else a worktree of --before-commit that
    is removed again when the benchmark ends (this checkout when no before run is asked)."""
    if "before" not in args.runs or args.before_root:
        yield Path(args.before_root) if args.before_root else ROOT
        return
    tree = Path(tempfile.mkdtemp(prefix="bench-traps-before-")) / "tree"
    git = ["git", "-C", str(ROOT), "worktree"]
    subprocess.run([*git, "add", "--detach", str(tree), args.before_commit], check=True)
    try:
        yield tree
    finally:
        subprocess.run([*git, "remove", "--force", str(tree)], check=False)
        with contextlib.suppress(OSError):
            tree.parent.rmdir()  # the mkdtemp folder, empty once the worktree is gone


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default=",".join(RUNS), help="comma list of ours,stock,before")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--budget-factor", type=int, default=4, help="page cap = this x real pages")
    parser.add_argument("--time-cap", type=float, default=240.0, help="CLOSESPIDER_TIMEOUT, s")
    parser.add_argument("--web", default="traps", help="traps, holdout or dealt:SEED")
    parser.add_argument("--delay", type=float, default=0.0, help="ours: FRONTIER_DELAY, s")
    parser.add_argument(
        "--trap-prose", type=int, default=0, help="words of its own on every trap page"
    )
    parser.add_argument(
        "--canonical-links", action="store_true", help='every page names its rel="canonical"'
    )
    parser.add_argument("--soft404-style", default="", help="restyle every soft-404 host")
    parser.add_argument("--calendar-style", default="", help="every calendar host's one calendar")
    parser.add_argument(
        "--generators", type=generator_styles, default=[], help="comma list of generator styles"
    )
    parser.add_argument(
        "--redirect-traps",
        type=redirect_trap_styles,
        default=[],
        help="comma list of redirect trap styles",
    )
    parser.add_argument(
        "--alternates", type=alternate_styles, default=[], help="comma list of view styles"
    )
    parser.add_argument(
        "--deal-styles", action="store_true", help="dealt:SEED: the options above dealt too"
    )
    parser.add_argument("--before-commit", default=BEFORE_COMMIT)
    parser.add_argument("--before-root", default="", help="an existing checkout to run as before")
    args = parser.parse_args(argv)
    args.runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    unknown = set(args.runs) - set(RUNS)
    if unknown:
        parser.error(f"--runs: unknown {sorted(unknown)}; choose from {','.join(RUNS)}")
    try:
        if args.deal_styles:
            print(f"--web {args.web} dealt the styles: {deal_styles(args) or '(none)'}")
        restyled(web_spec(args.web), args)  # a misspelt web or style stops here
    except (argparse.ArgumentTypeError, ValueError) as e:
        parser.error(str(e))
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    out = Path(tempfile.mkdtemp(prefix="bench-traps-"))
    print(f"logs and request logs in {out}")
    results: list[TrapRun] = []
    with before_checkout(args) as before:
        for n in range(1, args.repeats + 1):
            for label in args.runs:
                name = f"{label} #{n}" if args.repeats > 1 else label
                print(f"{name} ...", flush=True)
                result = run_one(label, name, args, (out / f"{label}-{n}", before))
                print(f"  {result.wall_s:.0f} s wall, {result.requests} requests", flush=True)
                results.append(result)
    print(table(HEADERS, [*(r.row() for r in results), *ratio_rows(results)]))
    print("\nrequests by kind (the test web's routes; robots.txt left out)")
    shown = ["generator"] if args.generators else []
    shown += ["redirect_trap"] if args.redirect_traps else []
    print(kinds_table(results, shown + (["alternate"] if args.alternates else [])))
    print(unjudged_lines(results))
    print(NOISE_NOTE)


if __name__ == "__main__":
    main()
