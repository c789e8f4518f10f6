"""SourceMiddleware: stamps each request a spider yields with where it came from.

The prioritizer scores a URL from its source and its parent (prioritizer.py), but a
Request the spider yields knows neither: this spider middleware writes them into its
meta as it leaves the callback (transient meta: never stored in the record). A sitemap
callback's requests are "sitemap" URLs; every other callback's are links, whose parent
is the response (its own score came from its record, meta "frontier_score").
Seeds come from start() and have no response: the prioritizer calls depth-0 URLs seeds.

Stats: frontier/sources/<source> per stamped request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from extensions.admission.prioritizer import PARENT_META, SCORE_META, SOURCE_META

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

# Callbacks whose requests are the URLs a sitemap listed (crawlproj's web spider).
SITEMAP_CALLBACKS = frozenset({"parse_sitemap"})


class SourceMiddleware(BaseSpiderMiddleware):
    def get_processed_request(self, request: Request, response: Response | None) -> Request:
        if response is None or SOURCE_META in request.meta:
            return request  # a seed (start()), or stamped by its maker
        callback = getattr(response.request.callback, "__name__", "") if response.request else ""
        source = "sitemap" if callback in SITEMAP_CALLBACKS else "link"
        request.meta[SOURCE_META] = source
        request.meta[PARENT_META] = (response.meta.get(SCORE_META), response.url)
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(f"frontier/sources/{source}")
        return request
