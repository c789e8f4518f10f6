"""MetadataPipeline: finalises the row and releases the spider's checkpoint.

Last of the content pipelines: every field of ROW_FIELDS is present (None when
unknown), so every row of a feed has the same columns, and the page's links
may now be followed (its body is stored, or it is a duplicate, or empty).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawlproj.checkpoint import checkpoint_for
from crawlproj.items import ROW_FIELDS, PageItem

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def simhash_hex(simhash: int | None) -> str | None:
    return None if simhash is None else f"{simhash:016x}"


def finalise_row(item: PageItem) -> PageItem:
    """Derived fields and defaults; replay runs the same function."""
    item["http_status"] = item.get("status")
    item["simhash_hex"] = simhash_hex(item.get("simhash"))
    for name in ROW_FIELDS:
        item.setdefault(name, None)
    return item


# Re-fetches whose body is not stored again: the row points at the stored copy.
KEPT_COPY = ("unchanged", "not_modified", "gone")


def outcome_of(item: PageItem) -> str:
    if item.get("change") in KEPT_COPY:
        return str(item["change"])
    if item.get("duplicate_of"):
        return "duplicate"
    return "stored" if item.get("content_ref") else "not_stored"


class MetadataPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.checkpoint = checkpoint_for(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MetadataPipeline:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        finalise_row(item)
        outcome = outcome_of(item)
        self.stats.inc_value(f"rows/{outcome}")
        self.checkpoint.resolve(item, outcome)
        return item
