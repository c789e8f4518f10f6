"""Template digests: a trap's pages are one template filled from their URL."""

from __future__ import annotations

from extensions.content.template import template_digest


def test_calendar_days_and_echoed_queries_share_a_template() -> None:
    a = template_digest(
        "Nothing is scheduled for 5 May 2024. Check another date.", "http://h/a/2024/05/05/"
    )
    b = template_digest(
        "Nothing is scheduled for 17 May 2031. Check another date.", "http://h/a/2031/05/17/"
    )
    assert a is not None and a == b
    q1 = template_digest(
        "No results for 'red shoes'. Try a longer query.", "http://h/search?q=red+shoes"
    )
    q2 = template_digest(
        "No results for 'blue hat big'. Try a longer query.", "http://h/search?q=blue+hat+big"
    )
    assert q1 is not None and q1 == q2


def test_distinct_pages_and_near_empty_pages() -> None:
    one = template_digest("The river rises in spring and floods the valley.", "http://h/p/1")
    two = template_digest("Our bakery opens at dawn with fresh rye bread.", "http://h/p/2")
    assert one != two
    assert template_digest("Home", "http://h/") is None
    # Words of the URL only: nothing of a template is left.
    assert template_digest("red shoes size nine", "http://h/shop/red-shoes?size=nine") is None
