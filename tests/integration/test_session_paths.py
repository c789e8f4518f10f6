"""Sites that keep sessions in their paths (session_web.py): every page is crawled once,
and a server that only ever redirects ends its chain instead of the crawl's budget."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import pytest

from extensions.admission.canonical import canonicalize
from scripts.crawlrun import run_crawl, write_seeds
from tests.integration.session_web import PAGES, STYLES, SessionWeb
from tests.integration.test_gates import stats_of

PAGE_STYLES = [style for style in STYLES if style != "loop"]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("sessions")
    with ExitStack() as stack:
        webs = {style: stack.enter_context(SessionWeb(style)) for style in STYLES}
        hosts = {web.host: web.address for web in webs.values()}
        settings = {"DNS_HOSTS_MAP": hosts, "FRONTIER_DELAY": 0.0}
        seeds = write_seeds(tmp / "seeds.txt", [web.url("/") for web in webs.values()])
        result = run_crawl(seeds, tmp / "data", settings, timeout=180)
    return {"result": result, "webs": webs}


def pages_of(web: SessionWeb, rows: list[dict[str, Any]]) -> list[str]:
    """The canonical paths of the web's rows of a page (status 200)."""
    base = web.url("")
    return [
        (canonicalize(row["url"]) or "").removeprefix(base)
        for row in rows
        if row["url"].startswith(base) and row["status"] == 200
    ]


def test_the_crawl_ends_by_itself(crawled) -> None:
    result = crawled["result"]
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log, result.log[-3000:]


@pytest.mark.parametrize("style", PAGE_STYLES)
def test_every_page_is_crawled_once(crawled, style: str) -> None:
    web: SessionWeb = crawled["webs"][style]
    pages = pages_of(web, crawled["result"].items)
    app = "/app" if style == "aspnet-app" else ""
    # The home page's row is the seed's: "/", wherever its redirects led.
    assert sorted(pages) == sorted(["/", *(f"{app}/p{n}" for n in range(1, PAGES))])
    fetched = [r["path"] for r in web.requests if r["status"] == 200 and "robots" not in r["path"]]
    # Each page's body once (and the soft-404 probe's answer, if the host had one).
    assert len(fetched) <= PAGES + 1, sorted(fetched)
    # A link goes out with its session: only a tokenless one (a root-relative link on
    # ASP.NET, the first visit) costs a redirect. On top: robots.txt, the probe and its
    # redirects, and for the virtual directory the home page's hop to it.
    bound = 2 * PAGES + 6 if style.startswith("aspnet") else PAGES + 4
    assert len(web.requests) <= bound, web.requests
    rows = [row["url"] for row in crawled["result"].items if row["url"].startswith(web.url(""))]
    assert not [url for url in rows if "(S(" in url or "jsessionid" in url]


def test_a_server_that_only_redirects_costs_a_few_requests(crawled) -> None:
    web: SessionWeb = crawled["webs"]["loop"]
    assert len(web.requests) <= 10, web.requests
    assert stats_of(crawled["result"]).get("frontier/rejected/redirect_loop", 0) >= 1
