"""Settings read from one declarative table per component, with one error format.

A component lists its settings once, as a Table of `Setting(name, field, kind, *rules)`,
and `read(table, settings)` builds its dataclass from Scrapy settings. Nothing here has a
default of its own: crawlproj/settings.py is the only place a default is written, so a
setting missing from the settings object is an error naming it (the component was built
from settings that are not the project's). Every bad value gets one line,
"FRONTIER_DELAY must be >= 0, not -1" (ValueError); components turn it into NotConfigured,
and the crawl's preflight into its one-line startup error.

A rule's bound may name a setting read before it in the same table, or a value the
caller passes as context (`at_least("FRONTIER_BACKOFF_BASE")`), so relations between
settings are rules too. Scrapy's getfloat/getint/getbool alone would only say "could not
convert string to float: 'x'" without naming the setting.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

T = TypeVar("T")

# What a value must be when it breaks the rule (e.g. ">= 0"), None when it holds; the
# mapping holds the values read before it (by setting name) and the caller's context.
Rule = Callable[[Any, Mapping[str, Any]], "str | None"]
# A number, or the name of a setting (or context value) the rule compares with.
Bound = float | str


def show(value: Any) -> str:
    """A value as an error shows it: -1.0 as -1 (getfloat turns "-1" into -1.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple):
        return repr(list(value))
    return repr(value)


def must_be(name: str, value: Any, must: str) -> ValueError:
    """The one error format: "FRONTIER_DELAY must be >= 0, not -1"."""
    return ValueError(f"{name} must be {must}, not {show(value)}")


@dataclasses.dataclass(frozen=True)
class Kind:
    """How a raw setting becomes a field value, and what it must be when it cannot."""

    what: str  # "a number", said in the error
    convert: Callable[[BaseSettings, str], Any]


def _text(settings: BaseSettings, name: str) -> str:
    value = settings.get(name)
    if value is None or isinstance(value, dict | list | tuple):
        raise TypeError(name)
    return str(value)


NUMBER = Kind("a number", lambda s, name: s.getfloat(name))
WHOLE = Kind("a whole number", lambda s, name: s.getint(name))
FLAG = Kind("true or false", lambda s, name: s.getbool(name))
TEXT = Kind("a string", _text)
STRINGS = Kind("a list of strings", lambda s, name: tuple(str(v) for v in s.getlist(name)))
WHOLE_NUMBERS = Kind(
    "a list of whole numbers", lambda s, name: tuple(int(v) for v in s.getlist(name))
)
_BY_TYPE: dict[type, Kind] = {float: NUMBER, int: WHOLE, bool: FLAG, str: TEXT}


class Setting:
    """One setting: the field it fills, its kind (float, int, bool, str or a Kind), its
    rules. `optional`: 0 (or "") switches it off; the field gets None, rules are skipped."""

    __slots__ = ("field", "kind", "name", "optional", "rules")

    def __init__(
        self, name: str, field: str, kind: type | Kind, *rules: Rule, optional: bool = False
    ) -> None:
        self.name = name
        self.field = field
        self.kind = kind if isinstance(kind, Kind) else _BY_TYPE[kind]
        self.rules = rules
        self.optional = optional

    def __repr__(self) -> str:
        return f"Setting({self.name!r}, {self.field!r})"

    def read(self, settings: BaseSettings, earlier: Mapping[str, Any] | None = None) -> Any:
        """The setting's value, converted and checked (ValueError in the one format)."""
        if self.name not in settings:
            raise ValueError(
                f"{self.name} is not set: crawlproj/settings.py gives every setting its default"
            )
        try:
            value = self.kind.convert(settings, self.name)
        except (TypeError, ValueError):
            raise must_be(self.name, settings.get(self.name), self.kind.what) from None
        if self.optional and not value:
            return None
        for rule in self.rules:
            must = rule(value, earlier or {})
            if must is not None:
                raise must_be(self.name, value, f"0 or {must}" if self.optional else must)
        return value


class Table(Generic[T]):
    """One component's settings, in reading order, and what they build (`into`)."""

    def __init__(self, into: Callable[..., T], *settings: Setting) -> None:
        self.into = into
        self.settings = settings

    def __repr__(self) -> str:
        return f"Table({getattr(self.into, '__qualname__', self.into)!r})"

    def check(
        self, settings: BaseSettings, context: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Every setting's value by name, each checked against its rules."""
        values: dict[str, Any] = {}
        seen = dict(context or {})
        for setting in self.settings:
            seen[setting.name] = values[setting.name] = setting.read(settings, seen)
        return values


def read(
    table: Table[T],
    settings: BaseSettings,
    context: Mapping[str, Any] | None = None,
    **fields: Any,
) -> T:
    """The component's object from Scrapy settings; `fields` are the ones no setting fills."""
    values = table.check(settings, context)
    by_field = {s.field: values[s.name] for s in table.settings}
    return table.into(**by_field, **fields)


# --- rules ------------------------------------------------------------------------------


def _bound(bound: Bound, earlier: Mapping[str, Any]) -> tuple[Any, str]:
    if isinstance(bound, str):
        return earlier[bound], f"{bound} ({show(earlier[bound])})"
    return bound, show(bound)


def _compare(test: Callable[[Any, Any], bool], sign: str, bound: Bound) -> Rule:
    def rule(value: Any, earlier: Mapping[str, Any]) -> str | None:
        limit, text = _bound(bound, earlier)
        return None if test(value, limit) else f"{sign} {text}"

    return rule


def at_least(bound: Bound) -> Rule:
    return _compare(operator.ge, ">=", bound)


def above(bound: Bound) -> Rule:
    return _compare(operator.gt, ">", bound)


def at_most(bound: Bound) -> Rule:
    return _compare(operator.le, "<=", bound)


def below(bound: Bound) -> Rule:
    return _compare(operator.lt, "<", bound)


def between(low: Bound, high: Bound) -> Rule:
    """low <= value <= high."""

    def rule(value: Any, earlier: Mapping[str, Any]) -> str | None:
        (lo, lo_text), (hi, hi_text) = _bound(low, earlier), _bound(high, earlier)
        return None if lo <= value <= hi else f"in {lo_text}..{hi_text}"

    return rule


def one_of(*choices: Any) -> Rule:
    def rule(value: Any, earlier: Mapping[str, Any]) -> str | None:
        return None if value in choices else f"one of {', '.join(map(str, choices))}"

    return rule


def matches(pattern: str, what: str) -> Rule:
    """The whole string matches `pattern`; `what` says it in words."""
    compiled = re.compile(pattern)

    def rule(value: Any, earlier: Mapping[str, Any]) -> str | None:
        return None if compiled.fullmatch(value) else what

    return rule


def satisfies(test: Callable[[Any], bool], what: str) -> Rule:
    """Any other property of the value alone; `what` says it in words."""

    def rule(value: Any, earlier: Mapping[str, Any]) -> str | None:
        return None if test(value) else what

    return rule
