"""Calendars: URLs naming a date, what a calendar's next/previous links look like.

A calendar answers every date, so its walk never ends: the prioritizer charges a URL
naming a date PRIORITY_CALENDAR_PENALTY, and a calendar's link from a calendar page
whose score has sunk to 0 is refused (prioritizer.ends_walk). Real calendars list their
own events on every page, so no duplicate check ends the walk for them: the URL is all
there is to go by, in the spellings sites use: numbers (/2024/05/17/, ?year=&month=,
?date=2024-05-17, ?d=20240517), weeks (/2024/week-02/) and month names (/2024/jan/,
/events/march-2024).
"""

from __future__ import annotations

import re

from extensions.admission.patterns import UrlParts, split_url

# A path that ends in a date (/2024/05, /2024/05/17/, /2024-05-17) or a week of a year
# (/2024/week-02/, /2024/w2, /2024-W02), or a query naming a year with a month, week or
# day, or holding a date: what a calendar's next/previous links look like. A post under a
# date (/2024/05/17/my-post) does not end in one.
_DATE_PATH = re.compile(
    r"/(1[6-9]|2[0-9])\d\d(([/-])(0?[1-9]|1[0-2])(\3(0?[1-9]|[12]\d|3[01]))?"
    r"|[/-](w|wk|week|kw)[-_]?(0?[1-9]|[1-4]\d|5[0-3]))/?$",
    re.IGNORECASE,
)
# A month by name beside its year (19xx, 20xx), ending the path: /2024/jan/, /2024-march,
# /jan-2024/, /events/march_2024 (_month_path).
_MONTHS = frozenset(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
     "dec", "january", "february", "march", "april", "june", "july", "august", "september",
     "october", "november", "december")
)  # fmt: skip
_DATE_NAMES = tuple(
    {year, part}
    for year in ("year", "yr", "y")
    for part in ("month", "mon", "mo", "m", "week", "wk", "w", "day")
    if (year, part) not in (("y", "mon"), ("y", "mo"), ("y", "wk"), ("y", "day"))
)
# A query value that is a date (?date=2024-05-17, ?month=2024-05, ?d=2024/05/17): a day
# or month calendar whatever its parameter's name (a bare number: _DATE_NUMBER).
_DATE_VALUE = re.compile(
    r"(?:^|&)[^=&]*=(1[6-9]|2[0-9])\d\d(-|/|%2[Ff])(0?[1-9]|1[0-2])(\2(0?[1-9]|[12]\d|3[01]))?"
    r"(?:&|$)"
)
# A bare number is a day only under a parameter named for one (?d=20240517, ?date=...):
# a valid YYYYMMDD. Its pages may each list their own events, so no copy ends the walk.
_DATE_NUMBER = re.compile(
    r"(?:^|&)(?:d|dt|date|day|ymd|datum)=(1[6-9]|2[0-9])\d\d(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])"
    r"(?:&|$)",
    re.IGNORECASE,
)


def is_calendar(url: str | UrlParts) -> bool:
    parts = split_url(url) if isinstance(url, str) else url
    path = parts.path
    if _names_a_date(path):
        return True
    if not parts.names:
        return False
    if any(date <= parts.names for date in _DATE_NAMES):
        return True
    query = parts.query
    if ("-" in query or "/" in query or "%2" in query) and _DATE_VALUE.search(query):
        return True
    return _DATE_NUMBER.search(query) is not None


def _names_a_date(path: str) -> bool:
    # _DATE_PATH's every match starts with "/1" or "/2": most paths skip the regex.
    if ("/1" in path or "/2" in path) and _DATE_PATH.search(path):
        return True
    return _month_path(path)


def _month_path(path: str) -> bool:
    """The path ends in a month by name beside its year (string work: a regex of month
    names cost ~0.6 us a URL, on the admission path). The year is 19xx or 20xx: most
    paths skip the rest."""
    if "19" not in path and "20" not in path:
        return False
    tail = path.rstrip("/")
    cut = tail.rfind("/")
    last = tail[cut + 1 :].lower()
    if last in _MONTHS:  # /2024/jan/
        before = tail[:cut]
        return _is_year(before[before.rfind("/") + 1 :])
    for sep in "-_":
        a, found, b = last.partition(sep)
        if found and ((a in _MONTHS and _is_year(b)) or (b in _MONTHS and _is_year(a))):
            return True
    return False


def _is_year(text: str) -> bool:
    return len(text) == 4 and text.isdigit() and text[:2] in ("19", "20")
