"""Trap families whose every page links a next one: calendars, growing paths, long URLs.

Each is a template (a few values in fixed words), so its pages are near duplicates of each
other, and each comes in two spellings or more so a crawler cannot pass by fitting one URL
shape: calendars by query (/events?year=&month=, /agenda?date=Y-M-D, /diary?d=YYYYMMDD)
and by path (/archive/Y/M/D/, /planner/Y/week-W/); path growth by distinct segments
(/docs/v1/more/more2/) and by a relative link re-appending the current segment with a
counter (/gallery/p1/p2/p3); long URLs by query (/search?q=) and by path
(/filter/<slug>), each growing until above 1000 characters.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from urllib.parse import parse_qs, urlencode

from .prose import WORDS, seeded_rng, sentence, template
from .routes import FamilyHandler, Link, Route, UrlFor
from .spec import HostSpec

MONTHS = "January February March April May June July August September October November December"
MONTH_NAMES = MONTHS.split()
LONG_URL_END = 1000  # a long-URL chain links on while its path+query is at most this long
GROWTH_WORDS = 6  # words a long URL gains per hop


class Endless:
    """The calendars, growing paths and long URLs HostSpec asks for on one host."""

    def __init__(self, h: HostSpec, url: UrlFor, seed: int) -> None:
        self.h, self.url, self.seed = h, url, seed

    def table(self) -> list[tuple[str, FamilyHandler]]:
        rows: dict[str, tuple[str, FamilyHandler]] = {
            "events": (r"/events", self._events),
            "archive": (r"/archive/(\d{4})/(\d{2})/(\d{2})/", self._archive),
            "dated": (r"/agenda", self._agenda_day),
            "compact": (r"/diary", self._diary_day),
            "weeks": (r"/planner/(\d{4})/week-(\d{2})/", self._week),
            "months": (r"/calendar/(\d{4})/([a-z]{3})/", self._named_month),
            "segments": (r"/docs/v1/((?:more\d*/)*)", self._segments),
            "counter": (r"/gallery((?:/p\d+)+)", self._counter),
            "query": (r"/search", self._search),
            "path": (r"/filter/([a-z]+(?:-[a-z]+)*)", self._filter),
        }
        return [rows[style] for style in self._styles()]

    def _styles(self) -> list[str]:
        return [*self.h.calendars, *self.h.path_growth, *self.h.long_urls]

    def entries(self) -> list[str]:
        first = {
            "events": "/events?year=2024&month=1",
            "archive": "/archive/2024/01/05/",
            "dated": "/agenda?date=2024-01-05",
            "compact": "/diary?d=20240105",
            "weeks": "/planner/2024/week-02/",
            "months": "/calendar/2024/jan/",
            "segments": "/docs/v1/",
            "counter": "/gallery/p1",
            "query": "/search?q=crawler",
            "path": "/filter/crawler",
        }
        return [first[style] for style in self._styles()]

    def real_paths(self) -> list[str]:
        return []

    def _home(self) -> tuple[Link, str]:
        return (Link(self.url("/"), "/"), "Home")

    # ---- calendars -----------------------------------------------------------------
    def _events(self, m: re.Match[str], query: str) -> Route | None:
        args = {k: v[-1] for k, v in parse_qs(query).items()}
        year, month = args.get("year", "2024"), args.get("month", "1")
        if not (year.isdigit() and month.isdigit() and int(year) >= 1 and 1 <= int(month) <= 12):
            return None
        y, mo = int(year), int(month)
        anchors = []
        for label, (ny, nm) in (("Previous", _month(y, mo, -1)), ("Next", _month(y, mo, 1))):
            if ny >= 1:
                q = urlencode({"year": ny, "month": nm})
                anchors.append((Link(self.url(f"/events?{q}"), f"?{q}"), f"{label} month"))
        when = f"{MONTH_NAMES[mo - 1]} {y}"
        return template(
            "calendar", f"Events: {when}", [self._agenda(when)], [*anchors, self._home()]
        )

    def _named_month(self, m: re.Match[str], query: str) -> Route | None:
        """A month by its name in the path (/calendar/2024/jan/), linking its neighbours."""
        names = [n[:3].lower() for n in MONTH_NAMES]
        if m.group(2) not in names or int(m.group(1)) < 1:
            return None
        y, mo = int(m.group(1)), names.index(m.group(2)) + 1
        anchors = []
        for label, (ny, nm) in (("Previous", _month(y, mo, -1)), ("Next", _month(y, mo, 1))):
            if ny >= 1:
                path = f"/calendar/{ny:04d}/{names[nm - 1]}/"
                anchors.append((Link(self.url(path), path), f"{label} month"))
        when = f"{MONTH_NAMES[mo - 1]} {y}"
        return template(
            "calendar", f"Calendar: {when}", [self._agenda(when)], [*anchors, self._home()]
        )

    def _archive(self, m: re.Match[str], query: str) -> Route | None:
        try:
            day = datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        anchors = []
        for label, delta in (("Previous", -1), ("Next", 1)):
            try:
                other = day + datetime.timedelta(days=delta)
            except OverflowError:  # 0001-01-01 and 9999-12-31 end the archive
                continue
            path = f"/archive/{other.year:04d}/{other.month:02d}/{other.day:02d}/"
            anchors.append((Link(self.url(path), path), f"{label} day"))
        when = f"{day.day} {MONTH_NAMES[day.month - 1]} {day.year:04d}"
        return template(
            "calendar", f"Archive: {when}", [self._agenda(when)], [*anchors, self._home()]
        )

    def _agenda_day(self, m: re.Match[str], query: str) -> Route | None:
        value = parse_qs(query).get("date", ["2024-01-05"])[-1]
        try:
            day = datetime.date.fromisoformat(value)
        except ValueError:
            return None
        return self._query_day(day, "/agenda?date=", _iso, ("Previous", "Next"), "Agenda")

    def _diary_day(self, m: re.Match[str], query: str) -> Route | None:
        """A day by a bare number (?d=20240105): no date shape for a rule to see."""
        value = parse_qs(query).get("d", ["20240105"])[-1]
        try:
            day = datetime.datetime.strptime(value, "%Y%m%d").date()
        except ValueError:
            return None
        return self._query_day(day, "/diary?d=", _compact, ("Earlier", "Later"), "Diary")

    def _query_day(
        self,
        day: datetime.date,
        prefix: str,
        spelling: Callable[[datetime.date], str],
        labels: tuple[str, str],
        title: str,
    ) -> Route:
        """A day page linking the day before and after, its date spelt into the query."""
        anchors = []
        for label, delta in zip(labels, (-1, 1), strict=True):
            try:
                other = spelling(day + datetime.timedelta(days=delta))
            except OverflowError:  # 0001-01-01 and 9999-12-31 end the calendar
                continue
            query = prefix.partition("?")[2]
            anchors.append((Link(self.url(f"{prefix}{other}"), f"?{query}{other}"), label))
        when = f"{day.day} {MONTH_NAMES[day.month - 1]} {day.year:04d}"
        return template(
            "calendar", f"{title}: {when}", [self._agenda(when)], [*anchors, self._home()]
        )

    def _week(self, m: re.Match[str], query: str) -> Route | None:
        """ISO weeks by path (/planner/2024/week-02/), previous and next."""
        year, week = int(m.group(1)), int(m.group(2))
        if not 1 <= year <= 9998 or not 1 <= week <= 52:
            return None
        anchors = []
        for label, (ny, nw) in (
            ("Previous", _week_step(year, week, -1)),
            ("Next", _week_step(year, week, 1)),
        ):
            if 1 <= ny <= 9998:
                path = f"/planner/{ny:04d}/week-{nw:02d}/"
                anchors.append((Link(self.url(path), path), f"{label} week"))
        when = f"week {week} of {year:04d}"
        return template(
            "calendar", f"Planner: {when}", [self._agenda(when)], [*anchors, self._home()]
        )

    def _agenda(self, when: str) -> str:
        # Mostly "nothing": the calendar trap's pages are one template with a date in it.
        rng = seeded_rng(self.seed, "agenda", self.h.name, when)
        if rng.random() < 0.1:
            return f"One entry on {when}: {sentence(rng, 6)}"
        return f"Nothing is scheduled for {when}. Check another date."

    # ---- growing paths -------------------------------------------------------------
    def _segments(self, m: re.Match[str], query: str) -> Route | None:
        have = m.group(1).split("/")[:-1]
        if have != ["more" if i == 1 else f"more{i}" for i in range(1, len(have) + 1)]:
            return None
        nxt = "more" if not have else f"more{len(have) + 1}"
        link = Link(self.url(f"{m.group(0)}{nxt}/"), f"{nxt}/")
        text = f"Version 1 documentation, continued (level {len(have)})."
        anchors = [(link, "Read more"), self._home()]
        return template("growth", f"Docs v1 level {len(have)}", [text], anchors)

    def _counter(self, m: re.Match[str], query: str) -> Route | None:
        have = m.group(1).split("/")[1:]
        if have != [f"p{i}" for i in range(1, len(have) + 1)]:
            return None
        k = len(have)
        # Relative to /gallery/p1/.../p(k-1)/, "pK/pK+1" lands one level deeper each hop.
        link = Link(self.url(f"{m.group(0)}/p{k + 1}"), f"p{k}/p{k + 1}")
        text = f"Gallery picture {k} of many."
        return template("growth", f"Gallery {k}", [text], [(link, "Next picture"), self._home()])

    # ---- long URLs -----------------------------------------------------------------
    def _more_words(self, text: str) -> str:
        rng = seeded_rng(self.seed, "longer", self.h.name, text)
        return " ".join(rng.choice(WORDS) for _ in range(GROWTH_WORDS))

    def _search(self, m: re.Match[str], query: str) -> Route | None:
        q = parse_qs(query).get("q", [""])[-1]
        anchors = [self._home()]
        if len(m.group(0)) + 1 + len(query) <= LONG_URL_END:
            more = urlencode({"q": f"{q} {self._more_words(q)}".strip()})
            anchors.insert(0, (Link(self.url(f"/search?{more}"), f"?{more}"), "More like this"))
        text = f"No results for {q!r}. Try a longer query."
        return template("longurl", "Search results", [text], anchors)

    def _filter(self, m: re.Match[str], query: str) -> Route | None:
        slug = m.group(1)
        anchors = [self._home()]
        if len(m.group(0)) <= LONG_URL_END:
            longer = slug + "-" + self._more_words(slug).replace(" ", "-")
            anchors.insert(0, (Link(self.url(f"/filter/{longer}"), longer), "Narrow down"))
        text = f"Nothing matches {slug.replace('-', ' ')}."
        return template("longurl", "Filtered listing", [text], anchors)


def _iso(day: datetime.date) -> str:
    return day.isoformat()


def _compact(day: datetime.date) -> str:
    return f"{day.year:04d}{day.month:02d}{day.day:02d}"


def _week_step(year: int, week: int, delta: int) -> tuple[int, int]:
    index = year * 52 + week - 1 + delta  # 52 weeks a year: a planner, not a calendar
    return index // 52, index % 52 + 1


def _month(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + month - 1 + delta
    return index // 12, index % 12 + 1
