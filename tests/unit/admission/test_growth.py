"""growth.grows: a link that only extends its parent's URL in place, and what is not."""

from __future__ import annotations

import pytest

from extensions.admission.growth import grows
from extensions.admission.patterns import split_url

GROWING = [
    # a related-search box appending a word, in either encoding of the space
    ("http://h.test/search?q=crawler+sero", "http://h.test/search?q=crawler"),
    ("http://h.test/search?q=a%20b%20c&lang=en", "http://h.test/search?lang=en&q=a%20b"),
    # a slug that grows
    ("http://h.test/filter/crawler-sero-fule", "http://h.test/filter/crawler-sero"),
    # relative links repeating a segment, with or without a counter
    ("http://h.test/trap/a/a", "http://h.test/trap/a"),
    ("http://h.test/docs/v1/more/more2/", "http://h.test/docs/v1/more/"),
    ("http://h.test/gallery/p1/p2/p3", "http://h.test/gallery/p1/p2"),
    ("http://h.test/x/page/page/page/", "http://h.test/x/page/"),
]

NOT_GROWING = [
    ("http://h.test/docs/guide/", "http://h.test/docs/"),  # the hierarchy's next level
    ("http://h.test/docs/guide/install/", "http://h.test/docs/guide/"),
    ("http://h.test/docs/v1/more/", "http://h.test/docs/v1/"),  # a new name under v1
    ("http://h.test/list?page=12", "http://h.test/list?page=1"),  # a counter
    ("http://h.test/item/12", "http://h.test/item/1"),
    ("http://h.test/archive/2024/05/", "http://h.test/archive/2024/"),  # a date's levels
    ("http://h.test/list?page=2&sort=price", "http://h.test/list?page=2"),  # a facet
    ("http://h.test/intro-advanced", "http://h.test/overview"),  # a sibling
    ("http://h.test/introduction", "http://h.test/intro"),  # a longer word, no joiner
    ("http://h.test/blog/my-post-2", "http://h.test/blog/my-post"),  # a numbered sibling
    ("http://h.test/search?q=a+2", "http://h.test/search?q=a"),
    ("http://other.test/search?q=a+b", "http://h.test/search?q=a"),  # another host
    ("http://h.test/search?q=a+b", "http://h.test/find?q=a"),  # another path
    ("http://h.test/", "http://h.test/"),
    ("http://h.test/a/", "http://h.test/"),  # the root has no stem
]


@pytest.mark.parametrize(("url", "parent"), GROWING)
def test_growth_in_place_counts(url: str, parent: str) -> None:
    assert grows(split_url(url), split_url(parent))


@pytest.mark.parametrize(("url", "parent"), NOT_GROWING)
def test_a_new_name_a_counter_or_another_place_does_not(url: str, parent: str) -> None:
    assert not grows(split_url(url), split_url(parent))
