"""PageItem: one metadata row per fetched document."""

from __future__ import annotations

import scrapy


class PageItem(scrapy.Item):
    # -- the fetch (spider) --
    url = scrapy.Field()  # the URL the frontier scheduled (before redirects)
    final_url = scrapy.Field()  # the URL that answered (after redirects)
    status = scrapy.Field()  # HTTP status of the final response
    http_status = scrapy.Field()  # same value as status (the metadata-row name)
    fetched_at = scrapy.Field()  # ISO 8601 UTC time the response arrived
    depth = scrapy.Field()  # hops from a seed
    ip = scrapy.Field()  # address the response came from
    content_type = scrapy.Field()  # Content-Type header, parameters stripped
    length = scrapy.Field()  # body length in bytes (as received, decompressed)
    etag = scrapy.Field()  # ETag header (for conditional re-fetches), else None
    last_modified = scrapy.Field()  # Last-Modified header, else None
    # Response headers that change how the body is parsed (Content-Type with its
    # charset, X-Robots-Tag, Link): name -> list of values. Replay rebuilds the
    # response from them, so it decodes and reads the body as the crawl did.
    headers = scrapy.Field()
    # -- the page (spider, re-run by replay) --
    noindex = scrapy.Field()  # meta robots / X-Robots-Tag said noindex (for our token)
    canonical = scrapy.Field()  # the page's declared <link rel=canonical> (or Link header)
    # Fields of the site-specific extractors matching the host (crawlproj/extractors),
    # merged into one dict: a fixed row schema, and no extractor can overwrite a core field.
    extracted = scrapy.Field()
    # -- the content (pipelines) --
    content_hash = scrapy.Field()  # sha256 hex of the whitespace-normalised body
    # sha256 hex of the page's main text (extensions/content/main_text.py): equal on a
    # re-fetch = unchanged, whatever the furniture around it did; None if no text
    text_hash = scrapy.Field()
    simhash = scrapy.Field()  # 64-bit simhash of the main text's 3-word shingles; None if none
    simhash_hex = scrapy.Field()  # the same as 16 hex digits
    duplicate_of = scrapy.Field()  # URL of the earlier exact/near duplicate, else None
    # Bits between this simhash and the near duplicate's original, or (a re-fetch)
    # the stored copy's; None when there is nothing to compare with, so None on an
    # exact duplicate (its content hash matched: no simhash compared; is_exact_duplicate).
    simhash_distance = scrapy.Field()
    # Near duplicates: the estimated 5-shingle resemblance with the original (>=
    # NEARDUP_MIN_RESEMBLANCE); 1.0 for exact duplicates; None otherwise.
    resemblance = scrapy.Field()
    content_ref = scrapy.Field()  # URI of the stored body (s3://... or file://...), else None
    # -- soft-404s (crawlproj/pipelines/soft404.py) --
    # True: a 200 page near its origin's answer for a path that cannot exist (body not
    # stored, links not followed); False: compared (or its origin answers 404s
    # honestly) and a real page; None: not compared (not a 200 HTML page, or the
    # origin's probe has not answered yet).
    # The probes (<origin>/<16 hex>-crawlproj-probe, a path no site has) get no row.
    soft_404 = scrapy.Field()
    # -- freshness (re-crawl pipelines) --
    # new (first fetch) | changed | unchanged (same body hash, or same main text:
    # not stored again) | not_modified (304) | gone (404/410)
    change = scrapy.Field()
    change_rate = scrapy.Field()  # estimated changes per second after this visit
    # -- the WARC record (crawlproj/pipelines/warc.py) --
    # Where the fetch's response/revisit record is: the stored file's URI, the offset and
    # length of its gzip member. None on the crawl's own rows (their file is not stored
    # yet when they are written); `scrapy replay` fills them from the stored CDXJ indexes.
    warc_file = scrapy.Field()
    warc_offset = scrapy.Field()
    warc_length = scrapy.Field()


def is_exact_duplicate(item: PageItem) -> bool:
    """The page's content hash matched an earlier page's (crawlproj/pipelines/content.py):
    a near duplicate always carries its simhash distance, an exact one none."""
    return bool(item.get("duplicate_of")) and item.get("simhash_distance") is None


# Column order of the metadata rows (FEED_EXPORT_FIELDS in settings.py repeats it).
# New columns go last: a CSV read by position keeps its columns.
ROW_FIELDS: tuple[str, ...] = (
    "url",
    "final_url",
    "status",
    "http_status",
    "fetched_at",
    "depth",
    "ip",
    "content_type",
    "length",
    "etag",
    "last_modified",
    "headers",
    "noindex",
    "canonical",
    "extracted",
    "content_hash",
    "text_hash",
    "simhash",
    "simhash_hex",
    "duplicate_of",
    "simhash_distance",
    "resemblance",
    "content_ref",
    "change",
    "change_rate",
    "soft_404",
    "warc_file",
    "warc_offset",
    "warc_length",
)
