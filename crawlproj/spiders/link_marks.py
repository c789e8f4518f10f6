"""The marks a page puts on the links it follows (crawlproj/spiders/web.py).

A sprawl candidate's own-shape links and a listing copy's items carry the page's lease
(records.SETTLES_META: their admission settles its verdict), a sprawl chain's page's links its
generation (admission/sprawl.py: a chain's third page closes its pattern and ends it), and a
facet sidebar's links their filter name (admission/facet_sidebar.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from extensions.admission.facet_sidebar import FACET_META
from extensions.admission.records import SETTLES_META
from extensions.admission.sprawl import SPRAWL_GEN_META


class LinkMarks(NamedTuple):
    """What a page marks its followed links with."""

    own: frozenset[str]  # a sprawl candidate's own-shape links, a listing copy's items
    sidebar: dict[str, str]  # facet sidebar links -> their filter names
    lease: str | None  # the page's lease, when its verdict waits on its marked links
    generation: int | None  # a sprawl chain's page's generation

    def meta(self, url: str) -> dict[str, Any] | None:
        """A followed link's marks: its page's lease (and a sprawl page's generation) on
        `own` links, a facet sidebar's filter name."""
        if url not in self.own and url not in self.sidebar:
            return None
        meta: dict[str, Any] = {FACET_META: self.sidebar[url]} if url in self.sidebar else {}
        if url in self.own:
            if self.lease is not None:
                meta[SETTLES_META] = self.lease
            if self.generation is not None:
                meta[SPRAWL_GEN_META] = self.generation
        return meta
