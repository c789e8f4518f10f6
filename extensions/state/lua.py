"""The one Lua loader: every stage's scripts (frontier, recrawl, simhash index) are read
here, through importlib.resources, not Path(__file__): scrapyd runs a zipped egg.

Redis scripts cannot include one another, so a script names the files it uses on its
first line (`-- include: util, router`) and is assembled here at load time: the files it
includes, each once and each after the files it includes itself, then its own body. An
entry script thus carries only the stages it uses (frontier/lua/: util, front_queues,
router, back_queues, ready_heap, outcome). The frontier's entry scripts also get a key
table generated from keys.FIXED_KEYS in front, so names and positions never drift apart.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from extensions.state.keys import FIXED_KEYS

ENTRY_SCRIPTS = ("admit", "lease", "lease_ip", "report", "route_pending", "unpark", "cancel_lease")
FRONTIER = "extensions.frontier"
INCLUDE = "-- include:"


class LuaIncludeError(ValueError):
    """A script includes a file that does not exist, or files include each other."""


def read_lua(package: str, name: str) -> str:
    """`<package>/lua/<name>.lua`, e.g. read_lua("extensions.recrawl", "claim")."""
    return resources.files(package).joinpath("lua", f"{name}.lua").read_text()


def includes(source: str) -> list[str]:
    """The names a script's first line declares, `-- include: a, b` (none without one)."""
    first = source.split("\n", 1)[0]
    if not first.startswith(INCLUDE):
        return []
    return [name.strip() for name in first.removeprefix(INCLUDE).split(",") if name.strip()]


def include_order(package: str, script: str) -> list[str]:
    """Every file `script` includes, directly or through another include, each once and
    after the files it includes: Lua locals exist only below their definition."""
    lua = resources.files(package).joinpath("lua")
    order: list[str] = []

    def visit(name: str, chain: list[str]) -> None:
        for used in includes(read_lua(package, name)):
            if used in chain:
                loop = " -> ".join([*chain, used])
                raise LuaIncludeError(f"{script}.lua: Lua files include each other: {loop}")
            if used in order:
                continue
            if not lua.joinpath(f"{used}.lua").is_file():
                raise LuaIncludeError(
                    f"{script}.lua: {name}.lua includes {used!r}, but there is no "
                    f"{package.replace('.', '/')}/lua/{used}.lua; fix the include line"
                )
            visit(used, [*chain, used])
            order.append(used)

    visit(script, [script])
    return order


def assemble(package: str, script: str) -> str:
    """`script`'s included files in dependency order, then its own body."""
    parts = [read_lua(package, name) for name in include_order(package, script)]
    return "\n".join([*parts, read_lua(package, script)])


@cache
def script_source(name: str) -> str:
    if name not in ENTRY_SCRIPTS:
        raise KeyError(f"unknown frontier script {name!r}")
    fields = ", ".join(f"{key} = KEYS[{i}]" for i, key in enumerate(FIXED_KEYS, start=1))
    return "local K = {" + fields + "}\n" + assemble(FRONTIER, name)
