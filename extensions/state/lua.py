"""The one Lua loader: every stage's scripts (frontier, recrawl, simhash index) are read
here, through importlib.resources, not Path(__file__): scrapyd runs a zipped egg.

The frontier's entry scripts are common.lua plus their own body.

Redis scripts cannot include one another, so the shared library (delay, ready heap,
router) is concatenated in front of every entry script at load time, behind a key
table generated from keys.FIXED_KEYS so names and positions never drift apart.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from extensions.state.keys import FIXED_KEYS

ENTRY_SCRIPTS = ("admit", "lease", "report", "route_pending", "unpark")


def read_lua(package: str, name: str) -> str:
    """`<package>/lua/<name>.lua`, e.g. read_lua("extensions.recrawl", "claim")."""
    return resources.files(package).joinpath("lua", f"{name}.lua").read_text()


def _read(name: str) -> str:
    return read_lua("extensions.frontier", name)


@cache
def script_source(name: str) -> str:
    if name not in ENTRY_SCRIPTS:
        raise KeyError(f"unknown frontier script {name!r}")
    fields = ", ".join(f"{key} = KEYS[{i}]" for i, key in enumerate(FIXED_KEYS, start=1))
    return "local K = {" + fields + "}\n" + _read("common") + "\n" + _read(name)
