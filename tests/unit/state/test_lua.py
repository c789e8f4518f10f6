"""The Lua loader: entry scripts assemble from the stage files they declare, in order.

Lua resolves a name it does not see as a local to a global, and Redis fails on that
only when the line runs; these tests find a missing or misplaced include before then,
by parsing `local function name` definitions and calls in every file.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest
import redis

from extensions.state.lua import (
    ENTRY_SCRIPTS,
    FRONTIER,
    LuaIncludeError,
    assemble,
    include_order,
    includes,
    read_lua,
    script_source,
)

# A comment or a one-line string, whichever starts first (the scripts use no long brackets).
COMMENT_OR_STRING = re.compile(r"--[^\n]*|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"")
DEFINED = re.compile(r"\bfunction\s+([A-Za-z_]\w*)\s*\(")
TOP_LEVEL_LOCAL = re.compile(r"^local\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=", re.M)
NAME = r"(?<![.:\w])([A-Za-z_]\w*)"
CALLED = re.compile(NAME + r"\s*\(")
KEYWORDS = {"and", "elseif", "function", "if", "in", "local", "not", "or", "return", "until"}
BUILTINS = {"assert", "error", "ipairs", "next", "pairs", "pcall", "select", "tonumber",
            "tostring", "type", "unpack"}  # fmt: skip
MakePackage = Callable[[dict[str, str]], str]


def code(source: str) -> str:
    assert "[[" not in source and "[=" not in source, "long brackets: extend code()"
    return COMMENT_OR_STRING.sub(" ", source)


def defined(source: str) -> set[str]:
    return set(DEFINED.findall(code(source)))


def provided(source: str) -> set[str]:
    """Functions and top-level locals (A, NOW, CFG...) a file gives to its includers."""
    names = {n.strip() for group in TOP_LEVEL_LOCAL.findall(code(source)) for n in group.split(",")}
    return defined(source) | names


def called(source: str) -> set[str]:
    calls = set(CALLED.findall(DEFINED.sub(" ", code(source))))
    return calls - KEYWORDS - BUILTINS


def undefined_calls(source: str, package: str = FRONTIER) -> set[str]:
    """Functions `source` calls that neither it nor a file it declares defines (a
    top-level local may name one: `local byte = string.byte`)."""
    known = provided(source).union(*(provided(read_lua(package, n)) for n in includes(source)))
    return called(source) - known


def lua_files() -> list[str]:
    folder = resources.files(FRONTIER).joinpath("lua")
    return sorted(p.name.removesuffix(".lua") for p in folder.iterdir() if p.name.endswith(".lua"))


def stage_files() -> list[str]:
    """Files for entry scripts to include: not an entry script, and not a standalone
    script (one that reads its own KEYS[i] and is loaded as it is)."""
    standalone = {name for name in lua_files() if "KEYS[" in code(read_lua(FRONTIER, name))}
    return [name for name in lua_files() if name not in {*ENTRY_SCRIPTS, *standalone}]


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MakePackage:
    """make(files) -> the name of a fresh importable package holding lua/<name>.lua."""

    def make(files: dict[str, str]) -> str:
        name = f"luafixture_{uuid.uuid4().hex}"
        (tmp_path / name / "lua").mkdir(parents=True)
        (tmp_path / name / "__init__.py").write_text("")
        for stem, text in files.items():
            (tmp_path / name / "lua" / f"{stem}.lua").write_text(text)
        return name

    monkeypatch.syspath_prepend(str(tmp_path))
    return make


@pytest.mark.parametrize("name", ENTRY_SCRIPTS)
def test_entry_script_is_key_table_then_includes_then_body(
    name: str, redis_client: redis.Redis
) -> None:
    source = script_source(name)
    parts = [read_lua(FRONTIER, n) for n in [*include_order(FRONTIER, name), name]]
    assert source.startswith("local K = {ready = KEYS[1], active = KEYS[2],")
    assert source.split("\n", 1)[1] == "\n".join(parts)
    redis_client.script_load(source)  # compiles: a syntax error raises here


@pytest.mark.parametrize("name", ENTRY_SCRIPTS)
def test_includes_resolve_once_each_after_its_own_includes(name: str) -> None:
    order = include_order(FRONTIER, name)
    assert len(order) == len(set(order))
    assert set(includes(read_lua(FRONTIER, name))) <= set(order)
    for i, stage in enumerate(order):
        assert set(includes(read_lua(FRONTIER, stage))) <= set(order[:i]), (name, stage)


def test_entry_scripts_carry_only_what_they_include() -> None:
    assert include_order(FRONTIER, "unpark") == ["util"]
    assert "outcome" in include_order(FRONTIER, "report")
    assert "outcome" not in include_order(FRONTIER, "lease")


def test_shared_includes_come_once_in_dependency_order(package: MakePackage) -> None:
    name = package(
        {
            "main": "-- include: b, c\nreturn 1",
            "b": "-- include: d\nlocal B = 2",
            "c": "-- include: d, b\nlocal C = 3",
            "d": "local D = 4",
        }
    )
    assert include_order(name, "main") == ["d", "b", "c"]
    parts = ["local D = 4", "-- include: d\nlocal B = 2", "-- include: d, b\nlocal C = 3"]
    assert assemble(name, "main") == "\n".join([*parts, "-- include: b, c\nreturn 1"])


def test_unknown_include_names_the_script_and_the_include(package: MakePackage) -> None:
    name = package({"main": "-- include: stage\nreturn 1", "stage": "-- include: nope\n"})
    with pytest.raises(LuaIncludeError) as raised:
        include_order(name, "main")
    message = str(raised.value)
    assert message.startswith("main.lua: stage.lua includes 'nope'"), message
    assert f"no {name}/lua/nope.lua" in message


def test_files_including_each_other_are_an_error(package: MakePackage) -> None:
    name = package({"main": "-- include: a\n", "a": "-- include: b\n", "b": "-- include: a\n"})
    with pytest.raises(LuaIncludeError, match=r"main -> a -> b -> a"):
        include_order(name, "main")


def test_an_unknown_script_name_is_refused() -> None:
    with pytest.raises(KeyError, match="'util'"):
        script_source("util")


def test_include_line_is_the_first_line_only() -> None:
    assert includes("-- include: util, router\nlocal x = 1") == ["util", "router"]
    assert includes("-- Lease requests.\n-- include: util\n") == []


def test_call_check_finds_a_function_no_include_defines() -> None:
    body = "-- include: util\nlocal function f() return 1 end\nstat(f(), rand())\nschedule_ip(ip)"
    assert undefined_calls(body) == {"schedule_ip"}
    assert called("redis.call('x') -- route(ip)\nlocal s = 'refill()'") == set()


@pytest.mark.parametrize("name", lua_files())
def test_every_called_function_is_defined_in_the_file_or_its_includes(name: str) -> None:
    source = read_lua(FRONTIER, name)
    assert undefined_calls(source) == set(), f"{name}.lua: declare the stage that defines these"


@pytest.mark.parametrize("name", lua_files())
def test_every_include_is_used(name: str) -> None:
    source = read_lua(FRONTIER, name)
    used = set(re.findall(NAME, code(source)))
    for stage in includes(source):
        assert provided(read_lua(FRONTIER, stage)) & used, f"{name}.lua does not use {stage}"


def test_every_stage_file_is_included_by_an_entry_script() -> None:
    included = {stage for name in ENTRY_SCRIPTS for stage in include_order(FRONTIER, name)}
    assert set(stage_files()) == included
    assert {"front_queues", "router", "back_queues", "ready_heap", "outcome"} <= included


def test_every_stage_function_is_called_and_defined_once() -> None:
    sources = [read_lua(FRONTIER, name) for name in lua_files()]
    calls = set().union(*map(called, sources))
    for stage in stage_files():
        dead = defined(read_lua(FRONTIER, stage)) - calls
        assert not dead, f"{stage}.lua: nothing calls {sorted(dead)}"
    definitions = [fn for source in sources for fn in defined(source)]
    assert len(definitions) == len(set(definitions)), "a function defined twice shadows one"


@pytest.mark.parametrize("name", stage_files())
def test_stage_file_opens_with_what_it_holds_and_the_keys_it_touches(name: str) -> None:
    source = read_lua(FRONTIER, name)
    lines = source.split("\n")[1:] if includes(source) else source.split("\n")
    header = "\n".join(line for line in lines[:8] if line.startswith("--"))
    assert len(header) > 80 and "Keys:" in header, header
