"""The shape of the code base (../shared/STYLE.md): small modules and functions, no import
circles, one package per stage with an __init__.py (scrapyd drops packages without one)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = ("extensions", "crawlproj", "scripts", "bench", "tests")
PACKAGES = ("extensions", "crawlproj")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 50
# crawlproj/settings.py is a table, not code: one commented line per setting, grouped by
# component, the one place a default is written (extensions/config.py). Splitting it would
# scatter that place; it gets more room instead.
SETTINGS_MODULE = Path("crawlproj/settings.py")
MAX_SETTINGS_LINES = 500


def python_files(*roots: str) -> Iterator[Path]:
    for root in roots:
        yield from sorted((ROOT / root).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def function_lengths(tree: ast.AST) -> Iterator[tuple[str, int, int]]:
    """(name, first line, length in lines, decorators included) of every function."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            assert node.end_lineno is not None
            yield node.name, node.lineno, node.end_lineno - start + 1


def test_modules_and_functions_are_small() -> None:
    too_long: list[str] = []
    for path in python_files(*CODE):
        text = path.read_text()
        rel = path.relative_to(ROOT)
        limit = MAX_SETTINGS_LINES if rel == SETTINGS_MODULE else MAX_MODULE_LINES
        if text.count("\n") > limit:
            too_long.append(f"{rel}: {text.count(chr(10))} lines")
        for name, line, length in function_lengths(ast.parse(text)):
            if length > MAX_FUNCTION_LINES:
                too_long.append(f"{rel}:{line} {name}(): {length} lines")
    assert not too_long, "split these (../shared/STYLE.md):\n" + "\n".join(too_long)


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """Project modules `path` imports anywhere (TYPE_CHECKING blocks and function bodies
    too: a circle that only type checking sees is still two modules knowing each other)."""
    out: set[str] = set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        out.update(name for name in names if name in known)
    return out


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def module_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in python_files(*PACKAGES)}
    known = set(files)
    # A package's __init__ is not an edge target: importing a.b always runs a/__init__.
    return {
        name: {
            m for m in imported_modules(path, known) if m != name and files[m].stem != "__init__"
        }
        for name, path in files.items()
    }


def stage_of(module: str) -> str:
    """extensions.frontier.core -> extensions.frontier; crawlproj modules stay whole."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "extensions" else module


def test_no_import_circles() -> None:
    cycle = find_cycle(module_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_stages_import_each_other_one_way() -> None:
    """The stage packages form a DAG (frontier uses admission, never the reverse)."""
    stages: dict[str, set[str]] = {}
    for module, imported in module_graph().items():
        here = stage_of(module)
        stages.setdefault(here, set()).update(s for s in map(stage_of, imported) if s != here)
    cycle = find_cycle(stages)
    assert cycle is None, " -> ".join(cycle or [])


def test_find_cycle_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_every_package_has_an_init() -> None:
    missing = [
        str(folder.relative_to(ROOT))
        for root in PACKAGES
        for folder in [ROOT / root, *(ROOT / root).rglob("*")]
        if folder.is_dir()
        and folder.name not in {"__pycache__", "lua"}
        and not (folder / "__init__.py").exists()
    ]
    assert not missing, f"scrapyd-deploy drops packages without __init__.py: {missing}"
