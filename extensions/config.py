"""One-line errors for bad settings, each naming the setting and what it must be.

Components validate their settings up front (FrontierConfig, RecrawlConfig, ...) with
`require`; the crawl's preflight first checks that every numeric or boolean setting
parses at all (`check_types`), since Scrapy's getfloat/getint/getbool would only say
"could not convert string to float: 'x'" without naming the setting.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

# (setting name, value, holds?, what it must be, e.g. ">= 1")
Rule = tuple[str, Any, bool, str]


def require(rules: Iterable[Rule]) -> None:
    """Raise ValueError for the first rule that does not hold."""
    for name, value, holds, must in rules:
        if not holds:
            raise ValueError(f"{name} must be {must}, not {value!r}")


def check_types(settings: Any, defaults: ModuleType) -> None:
    """Every upper-case setting of `defaults` with a bool or number default must parse
    as one (an int default may be given as a float: some are read with getfloat)."""
    for name in dir(defaults):
        default = getattr(defaults, name)
        if not name.isupper() or not isinstance(default, bool | int | float):
            continue
        reader, kind = (
            (settings.getbool, "true or false")
            if isinstance(default, bool)
            else (settings.getfloat, "a number")
        )
        try:
            reader(name)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be {kind}, not {settings.get(name)!r}") from None
