"""PageItem: one metadata row per fetched document."""

from __future__ import annotations

import scrapy


class PageItem(scrapy.Item):
    url = scrapy.Field()  # the URL the frontier scheduled (before redirects)
    final_url = scrapy.Field()  # the URL that answered (after redirects)
    status = scrapy.Field()  # HTTP status of the final response
    fetched_at = scrapy.Field()  # ISO 8601 UTC time the response arrived
    depth = scrapy.Field()  # hops from a seed
    ip = scrapy.Field()  # address the response came from
    content_type = scrapy.Field()  # Content-Type header, parameters stripped
    length = scrapy.Field()  # body length in bytes (as received, decompressed)
    noindex = scrapy.Field()  # meta robots / X-Robots-Tag said noindex (for our token)
    canonical = scrapy.Field()  # the page's declared <link rel=canonical> (or Link header)
