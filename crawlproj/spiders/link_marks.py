"""The marks a page puts on the links it follows (crawlproj/spiders/web.py).

A sprawl candidate's own-shape links and a listing copy's items carry the page's lease
(records.SETTLES_META: their admission settles its verdict), a sprawl page's links its
generation too (admission/sprawl.py: a chain of sprawl pages closes its pattern), and a
facet sidebar's links their filter name (admission/facet_sidebar.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from scrapy.http import Response

from extensions.admission.facet_sidebar import FACET_META
from extensions.admission.records import SETTLES_META
from extensions.admission.sprawl import SPRAWL_GEN_META, SPRAWL_OUTCOMES, sprawl_generation


def generation_of(response: Response) -> int | None:
    """A sprawl page's generation (admission/sprawl.py), None for another page."""
    if response.meta.get("frontier_outcome") not in SPRAWL_OUTCOMES:
        return None
    return sprawl_generation(response.meta.get(SPRAWL_GEN_META))


class LinkMarks(NamedTuple):
    """What a page marks its followed links with."""

    own: frozenset[str]  # a sprawl candidate's own-shape links, a listing copy's items
    sidebar: dict[str, str]  # facet sidebar links -> their filter names
    lease: str | None  # the page's lease
    generation: int | None  # a sprawl page's generation

    def meta(self, url: str) -> dict[str, Any] | None:
        """A followed link's marks: its page's lease (and a sprawl page's generation) on
        `own` links, a facet sidebar's filter name."""
        if url not in self.own and url not in self.sidebar:
            return None
        meta: dict[str, Any] = {FACET_META: self.sidebar[url]} if url in self.sidebar else {}
        if url in self.own:
            meta[SETTLES_META] = self.lease
            if self.generation is not None:
                meta[SPRAWL_GEN_META] = self.generation
        return meta
