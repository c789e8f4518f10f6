"""The sprawl check (generator traps, extensions/admission/sprawl.py) on and off, side by
side: what it saves where there is a trap and what it costs where there is none.

Run by hand from the project root (~3 min; `--manuals` needs Debian's git-doc, cmake-doc,
python3.11-doc and postgresql-doc-15, which scripts/install-docs installs):

    .venv/bin/python bench/bench_sprawl.py [--webs farm,manuals,wiki] [--cap 800]
        [--server python|nginx] [--wiki-links 3,6,12] [--wiki-seeds 1]

- farm: a wildcard-DNS farm (HostSpec.subdomain_prose: every made-up subdomain of
  farm.test serves paragraphs of its own and links three more) beside docs.test; the
  crawl is capped at --cap pages (CLOSESPIDER_PAGECOUNT), as it never ends without the
  check. Requests on made-up hosts, real coverage, whether it ended by itself.
- manuals: the four manuals, each served from its folder on its own 127.0.55.x address,
  crawled whole: pages stored per manual (the check must lose none) and sprawl candidates.
  --server nginx serves them through a real nginx (Debian's nginx-light; bench/_nginx.py)
  instead of Python's http.server.
- wiki: 600 real pages linking each other at random, --wiki-links each, beside a menu of
  five (scripts/testweb/random_wiki.py): the real site most like a generator with a menu
  of its own. Real coverage (the check must lose none), sprawl candidates and demoted
  patterns, per --wiki-seeds seed.

Both crawls of a web run one after the other with the same settings but
PRIORITY_SPRAWL_MIN_LINKS (2, the default, vs 0: off). The trap webs with tarpits are
bench_traps.py --generators.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import NOISE_NOTE, table  # noqa: E402
from bench._nginx import have_nginx, nginx_sites  # noqa: E402
from scripts.crawlrun import CrawlResult, run_crawl, write_seeds  # noqa: E402
from scripts.testweb import HostSpec, TestWeb, WebSpec  # noqa: E402
from scripts.testweb.random_wiki import Wiki, wiki_server  # noqa: E402

MANUALS = {  # host -> (folder, address)
    "git-docs.test": ("/usr/share/doc/git-doc", "127.0.55.1"),
    "cmake-docs.test": ("/usr/share/doc/cmake-data/html", "127.0.55.2"),
    "python-docs.test": ("/usr/share/doc/python3.11-doc/html", "127.0.55.3"),
    "pg-docs.test": ("/usr/share/doc/postgresql-doc-15/html", "127.0.55.4"),
}
CHECK = {"on": 2, "off": 0}  # PRIORITY_SPRAWL_MIN_LINKS
STATS = re.compile(r"'((?:crawlproj|frontier)/[a-z_/]*(?:sprawl|trap_demoted)[a-z_/]*)': (\d+)")
WEBS = ("farm", "manuals", "wiki")
WIKI_PAGES, WIKI_ADDRESS = 600, "127.0.55.9"


def base_settings(hosts_map: str, check: str, **extra: Any) -> dict[str, Any]:
    return {
        "DNS_HOSTS_MAP": hosts_map,
        "FRONTIER_DELAY": 0.0,
        "FRONTIER_DNS_RETRIES": 0,
        "PRIORITY_SPRAWL_MIN_LINKS": CHECK[check],
        **extra,
    }


def sprawl_stats(result: CrawlResult) -> str:
    found = dict(STATS.findall(result.log))
    return ", ".join(f"{k.rsplit('/', 1)[1]} {v}" for k, v in sorted(found.items())) or "-"


def farm_web() -> WebSpec:
    farm = HostSpec("farm.test", pages=60, sitemap=True, subdomain_trap=True)
    farm.subdomain_prose = True
    return WebSpec(hosts=[farm, HostSpec("docs.test", pages=60, guide=[3, 4])], seed=5)


def farm_row(check: str, cap: int, tmp: Path) -> list[Any]:
    tmp.mkdir(parents=True)
    with TestWeb(farm_web(), lifetime=600) as web:
        seeds = write_seeds(tmp / "seeds.txt", web.seeds)
        settings = base_settings(web.hosts_map_setting(), check, CLOSESPIDER_PAGECOUNT=cap)
        result = run_crawl(seeds, tmp / "data", settings, timeout=500)
        requests = [r for r in web.requests() if not r["url"].endswith("/robots.txt")]
    kinds = Counter(web.site.kind(r["url"]) for r in requests)
    real = set(web.real_pages())
    fetched = {r["url"] for r in requests if r["status"] == 200}
    ended = "yes" if "'finish_reason': 'finished'" in result.log else "no (capped)"
    coverage = f"{len(real & fetched) / len(real):.3f}"
    return [f"farm, check {check}", len(requests), kinds["subdomain"], coverage, ended]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def manual_servers(server: str, tmp: Path) -> Iterator[dict[str, int]]:
    """host -> port of an HTTP server per manual, on its own loopback address."""
    if server == "nginx":
        with nginx_sites(MANUALS, tmp / "nginx") as ports:
            yield ports
        return
    servers = {
        host: ThreadingHTTPServer((address, 0), functools.partial(_Quiet, directory=folder))
        for host, (folder, address) in MANUALS.items()
    }
    for server in servers.values():
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield {host: server.server_address[1] for host, server in servers.items()}
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()


def manuals_row(check: str, server: str, tmp: Path) -> list[Any]:
    tmp.mkdir(parents=True)
    hosts_map = ",".join(f"{host}={address}" for host, (_, address) in MANUALS.items())
    with manual_servers(server, tmp) as ports:
        urls = [f"http://{host}:{port}/index.html" for host, port in ports.items()]
        seeds = write_seeds(tmp / "seeds.txt", urls)
        result = run_crawl(seeds, tmp / "data", base_settings(hosts_map, check), timeout=1500)
    stored = Counter(
        re.sub(r"^https?://([^:/]+).*", r"\1", item["url"])
        for item in result.items
        if item.get("status") == 200
    )
    per_manual = " / ".join(str(stored[host]) for host in MANUALS)
    return [f"manuals, check {check}", sum(stored.values()), per_manual, sprawl_stats(result)]


def wiki_row(check: str, links: int, seed: int, tmp: Path) -> list[Any]:
    tmp.mkdir(parents=True)
    wiki = Wiki(WIKI_PAGES, links, seed)
    with wiki_server(wiki, WIKI_ADDRESS) as port:
        seeds = write_seeds(tmp / "seeds.txt", [f"http://wiki.test:{port}/"])
        settings = base_settings(f"wiki.test={WIKI_ADDRESS}", check)
        result = run_crawl(seeds, tmp / "data", settings, timeout=900)
    fetched = {
        re.sub(r"^https?://[^/]+", "", item["url"])
        for item in result.items
        if item.get("status") == 200
    }
    coverage = f"{len(fetched & set(wiki.paths())) / WIKI_PAGES:.3f}"
    return [f"wiki, {links} links, seed {seed}, check {check}", coverage, sprawl_stats(result)]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--webs", default="farm,manuals", help="comma list of " + ",".join(WEBS))
    parser.add_argument("--cap", type=int, default=800, help="farm: CLOSESPIDER_PAGECOUNT")
    parser.add_argument("--server", default="python", choices=("python", "nginx"))
    parser.add_argument("--wiki-links", default="3,6,12", help="wiki: comma list of links")
    parser.add_argument("--wiki-seeds", default="1", help="wiki: comma list of seeds")
    args = parser.parse_args()
    args.webs = [w.strip() for w in args.webs.split(",") if w.strip()]
    if unknown := set(args.webs) - set(WEBS):
        parser.error(f"--webs: unknown {sorted(unknown)}; choose from {','.join(WEBS)}")
    if "manuals" in args.webs and not all(Path(f).is_dir() for f, _ in MANUALS.values()):
        parser.error("--webs manuals: run scripts/install-docs first (Debian's doc packages)")
    if "manuals" in args.webs and args.server == "nginx" and not have_nginx():
        parser.error("--server nginx: no nginx on PATH (apt-get install nginx-light)")
    for name in ("wiki_links", "wiki_seeds"):
        try:
            setattr(args, name, [int(n) for n in getattr(args, name).split(",") if n.strip()])
        except ValueError:
            parser.error(f"--{name.replace('_', '-')}: a comma list of numbers")
    return args


def main() -> None:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sprawl-") as tmp:
        if "farm" in args.webs:
            rows = [farm_row(c, args.cap, Path(tmp) / f"farm-{c}") for c in CHECK]
            heads = ["web", "requests", "on made-up hosts", "real coverage", "ended by itself"]
            print(table(heads, rows))
        if "manuals" in args.webs:
            rows = [manuals_row(c, args.server, Path(tmp) / f"manuals-{c}") for c in CHECK]
            names = " / ".join(h.split("-")[0] for h in MANUALS)
            print(table([f"web ({args.server})", "pages stored", names, "sprawl stats"], rows))
        if "wiki" in args.webs:
            rows = [
                wiki_row(c, k, seed, Path(tmp) / f"wiki-{k}-{seed}-{c}")
                for k in args.wiki_links
                for seed in args.wiki_seeds
                for c in CHECK
            ]
            print(table(["web", "real coverage", "sprawl stats"], rows))
    print(NOISE_NOTE)


if __name__ == "__main__":
    main()
