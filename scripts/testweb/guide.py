"""A /guide/ tree of real pages several levels deep (HostSpec.guide = fan-out per level).

Real documentation is a hierarchy, not a flat /page/N chain: the budget tests need real
pages at URL depth 3-4 beside traps whose URLs also grow deeper, so URL depth alone cannot
tell them apart. Inner nodes end with "/", leaves do not; every link is relative, as in
generated documentation.
"""

from __future__ import annotations

import itertools
import posixpath
import re

from .routes import FamilyHandler, Link, Route, UrlFor
from .spec import HostSpec

LEVELS = ("part", "chapter", "topic", "note")


class Guide:
    def __init__(self, h: HostSpec, url: UrlFor) -> None:
        self.h, self.url = h, url
        self.fanout = list(h.guide)

    def table(self) -> list[tuple[str, FamilyHandler]]:
        return [(r"/guide/((?:[a-z]+-\d+/)*)([a-z]+-\d+)?", self._node)]

    def entries(self) -> list[str]:
        return ["/guide/"]

    def real_paths(self) -> list[str]:
        levels = range(len(self.fanout) + 1)
        nodes = (
            numbers
            for depth in levels
            for numbers in itertools.product(*(range(1, k + 1) for k in self.fanout[:depth]))
        )
        return [self.path(list(numbers)) for numbers in nodes]

    def path(self, numbers: list[int]) -> str:
        segments = "/".join(f"{LEVELS[d]}-{k}" for d, k in enumerate(numbers))
        leaf = len(numbers) == len(self.fanout)
        return "/guide/" + segments + ("" if leaf or not numbers else "/")

    def _parse(self, m: re.Match[str]) -> list[int] | None:
        names = [s for s in m.group(1).split("/") if s] + ([m.group(2)] if m.group(2) else [])
        numbers = []
        for depth, name in enumerate(names):
            level, _, k = name.partition("-")
            ok = depth < len(self.fanout) and level == LEVELS[depth] and str(int(k)) == k
            if not ok or not 1 <= int(k) <= self.fanout[depth]:
                return None
            numbers.append(int(k))
        # One spelling per node: inner nodes end with "/", leaves never do.
        return numbers if self.path(numbers) == m.group(0) else None

    def _node(self, m: re.Match[str], query: str) -> Route | None:
        numbers = self._parse(m)
        if numbers is None:
            return None
        here = self.path(numbers)
        targets = []
        if numbers:
            targets.append(self.path(numbers[:-1]))
            for k in (numbers[-1] - 1, numbers[-1] + 1):  # siblings
                if 1 <= k <= self.fanout[len(numbers) - 1]:
                    targets.append(self.path([*numbers[:-1], k]))
        if len(numbers) < len(self.fanout):
            targets += [self.path([*numbers, k]) for k in range(1, self.fanout[len(numbers)] + 1)]
        links = [Link(self.url(t), _relative(t, here)) for t in targets]
        links.append(Link(self.url("/"), "/"))
        return Route("page", title=f"{self.h.name} guide {here}", links=tuple(links))


def _relative(target: str, here: str) -> str:
    base = here if here.endswith("/") else posixpath.dirname(here) + "/"
    rel = posixpath.relpath(target, base)
    return rel + "/" if target.endswith("/") else rel
