"""Turn on components that settings.py does not list yet, for a test crawl.

`-s EXTENSIONS=...` (and DOWNLOADER_MIDDLEWARES) on the command line REPLACES the
project's dict in Scrapy 2.19 (a cmdline-priority value replaces a project-priority
one whole), so the project's entries are merged in here rather than lost.
"""

from __future__ import annotations

from typing import Any

from crawlproj import settings as project

METRICS = "extensions.observe.metrics.CrawlMetrics"
REPORT = "extensions.observe.report.CrawlReport"
FETCH_ERRORS = "extensions.fetch.errors.FetchErrorsMiddleware"

# The orders handed over for settings.py.
EXTENSION_ORDERS = {METRICS: 600, REPORT: 610}
MIDDLEWARE_ORDERS = {FETCH_ERRORS: 940}


def with_components(*names: str) -> dict[str, Any]:
    """EXTENSIONS / DOWNLOADER_MIDDLEWARES settings: the project's plus `names`."""
    extensions = {**project.EXTENSIONS}
    middlewares = {**project.DOWNLOADER_MIDDLEWARES}
    for name in names:
        if name in EXTENSION_ORDERS:
            extensions[name] = EXTENSION_ORDERS[name]
        else:
            middlewares[name] = MIDDLEWARE_ORDERS[name]
    return {"EXTENSIONS": extensions, "DOWNLOADER_MIDDLEWARES": middlewares}
