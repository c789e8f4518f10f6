"""Template digests: a trap's pages are one template filled from their URL."""

from __future__ import annotations

from extensions.content.template import blames, template_digest


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
    # Every word explained by the URL: the empty template, shared by all such pages.
    empty = template_digest("Calendar 2024-05", "http://h/calendar/2024/05")
    assert empty is not None and empty == template_digest("red shoes", "http://h/red-shoes")


def test_a_duplicate_blames_the_longer_spelling() -> None:
    # page/7 fetched after page/7?visit=3 (a session id on every link): not its fault.
    assert not blames("http://h/page/7", "http://h/page/7?visit=3")
    assert not blames("http://h/docs/", "http://h/docs/more/more2/")
    assert blames("http://h/page/7?visit=4", "http://h/page/7")
    assert blames("http://h/cal/2024/02", "http://h/cal/2024/01")


def test_month_names_are_part_of_the_date() -> None:
    jan = template_digest(
        "Nothing is scheduled for January 2024.", "http://h/events?month=1&year=2024"
    )
    mar = template_digest(
        "Nothing is scheduled for March 2031.", "http://h/events?month=3&year=2031"
    )
    assert jan is not None and jan == mar
