"""Where the metadata rows go when no feed is configured.

Scrapy merges -o/-O into FEEDS instead of replacing it, so a default in FEEDS
would be written beside every -O file. Instead the `web` spider adds
CRAWL_ITEMS_URI as the one feed only when FEEDS, -o and -O name none.

``%(data_dir)s`` (FEED_URI_PARAMS = uri_params) is CRAWL_DATA_DIR resolved the
way the rest of the crawl state is (relative to the project root), so the rows
land beside the crawl's Redis data whatever the working directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from extensions.state.connection import data_dir_from_settings

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def add_default_feed(settings: BaseSettings) -> None:
    """FEEDS = {CRAWL_ITEMS_URI: jsonlines} when no feed is configured."""
    uri = settings.get("CRAWL_ITEMS_URI") or ""
    if uri and not settings.getdict("FEEDS"):
        settings.set("FEEDS", {uri: {"format": "jsonlines"}}, priority="spider")


def uri_params(params: dict[str, Any], spider: Any) -> dict[str, Any]:
    """FEED_URI_PARAMS hook: Scrapy's parameters plus ``data_dir``."""
    return {**params, "data_dir": str(data_dir_from_settings(spider.crawler.settings))}
