"""URL_SKIP_EXTENSIONS: links that are clearly not pages never enter the frontier (issue #12).

Measured on a Sphinx documentation site behind nginx: 27% of all requests went to
non-page files, most of them the _sources/*.rst.txt listing linked from every page.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from scrapy import Request

from extensions.admission.admit import url_filter_from_settings
from extensions.admission.filters import UrlFilter
from tests.project_settings import project_settings
from tests.unit.frontier.scheduler_harness import VirtualClock, close, open_scheduler, settle
from tests.unit.frontier.scheduler_harness import settings_for as scheduler_settings

DEFAULTS = url_filter_from_settings(project_settings())


@pytest.mark.parametrize(
    "path",
    [
        "/_sources/index.rst.txt",  # Sphinx source listings
        "/_static/logo.svg",
        "/_static/fonts/Lato.woff2",
        "/_static/app.min.js.map",
        "/_static/pygments.css",
        "/_images/diagram.PNG",  # case-insensitive
        "/downloads/manual.pdf",
        "/dist/project-1.0.tar.gz",
        "/media/talk.mp4",
        "/photo.jpeg?width=200",  # the query is not looked at
    ],
)
def test_the_defaults_skip_files_that_are_not_pages(path: str) -> None:
    assert DEFAULTS.check("http://docs.test" + path, 1) == "extension"


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/guide/index.html",
        "/guide/install",
        "/api/v2.1/",  # a dot in a folder, not in the last segment
        "/logo.png/comments",  # the extension of a folder does not count
        "/img/",
        "/view?file=logo.png",  # only the path's last segment counts
        "/robots.txt",  # fetched by the frontier for every origin
        "/sitemap.xml",
        "/sitemap_index.xml.gz",  # "gz" is skipped, sitemaps are not
        "/release-notes.2024",
    ],
)
def test_the_defaults_keep_pages_robots_txt_and_sitemaps(path: str) -> None:
    assert DEFAULTS.check("http://docs.test" + path, 1) is None


def test_entries_are_normalised_and_may_have_two_parts() -> None:
    url_filter = UrlFilter(skip_extensions=[".PNG", "rst.txt", " ", ""])
    assert url_filter.skip_extensions == {"png", "rst.txt"}
    assert url_filter.check("http://a.test/x.png", 0) == "extension"
    assert url_filter.check("http://a.test/_sources/x.rst.txt", 0) == "extension"
    assert url_filter.check("http://a.test/notes.txt", 0) is None


@pytest.mark.parametrize("value", [[], ""])  # "" is `-s URL_SKIP_EXTENSIONS=`
def test_an_empty_list_is_off(value: object) -> None:
    url_filter = url_filter_from_settings(project_settings({"URL_SKIP_EXTENSIONS": value}))
    assert url_filter.check("http://a.test/x.png", 0) is None


def test_the_frontier_counts_them_as_filter_extension(
    redis_url: str, redis_client: object, data_dir: Path
) -> None:
    async def go() -> tuple[list[bool], dict[str, int]]:
        scheduler, _, _ = await open_scheduler(
            scheduler_settings(redis_url, data_dir), VirtualClock()
        )
        urls = [
            "http://127.0.0.1/a.png",
            "http://127.0.0.1/_sources/a.rst.txt",
            "http://127.0.0.1/a",
        ]
        queued = [scheduler.enqueue_request(Request(url)) for url in urls]
        await settle(scheduler.session)
        stats = scheduler.stats.get_stats()
        await close(scheduler)
        return queued, stats

    queued, stats = asyncio.run(go())
    assert queued == [False, False, True]
    assert stats["frontier/rejected/filter/extension"] == 2
    assert stats["frontier/admitted"] == 1
