"""The frontier's Lua scripts: each entry script is common.lua plus its own body.

Redis scripts cannot include one another, so the shared library (delay, ready heap,
router) is concatenated in front of every entry script at load time, behind a key
table generated from keys.FIXED_KEYS so names and positions never drift apart.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from extensions.frontier.keys import FIXED_KEYS

ENTRY_SCRIPTS = ("admit", "lease", "report", "route_pending", "unpark")


def _read(name: str) -> str:
    return resources.files("extensions.frontier").joinpath("lua", f"{name}.lua").read_text()


@cache
def script_source(name: str) -> str:
    if name not in ENTRY_SCRIPTS:
        raise KeyError(f"unknown frontier script {name!r}")
    fields = ", ".join(f"{key} = KEYS[{i}]" for i, key in enumerate(FIXED_KEYS, start=1))
    return "local K = {" + fields + "}\n" + _read("common") + "\n" + _read(name)
