"""The house keeps its shape: layers point one way, no import cycle, short modules with docstrings,
the public API at the top, and the old import paths still working with a warning."""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "deepagent_magics"
MAX_LINES = 400

# What each room may import from the package (besides itself and the standard library).
ALLOWED = {
    "core": set(),
    "interpreters": {"core"},
    "tools": {"core", "interpreters"},
    "records": {"core"},
    "display": {"core", "records"},
    "tuning": {"core"},
    "magics": {"core", "interpreters", "tools", "display", "records", "tuning"},
    "cli": {"core", "interpreters", "tools", "display", "records", "tuning", "testing"},
    "server": {"core", "records"},
    "mcp": {"core", "records"},
    "demos": {"testing"},
    "testing": set(),
    "testing_provider": set(),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules ``name`` imports (at any level, except under ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    found.add(f"{target}.{alias.name}")
                elif target in known:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(name)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    known = set(modules())
    return {name: imports_of(name, path, known) for name, path in modules().items()}


def room(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_graph_sees_imports(graph):
    """The walker itself: it must see relative, absolute and function-level imports."""
    assert "deepagent_magics.core.run" in graph["deepagent_magics.core.agent"]
    assert "deepagent_magics.interpreters.kernel" in graph["deepagent_magics.tools.delegation.subagent"]
    assert "deepagent_magics.display.dashboard" in graph["deepagent_magics.display.show"]  # imported in a function


def test_there_is_no_import_cycle(graph):
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_layers_point_one_way(graph):
    wrong = []
    for name, targets in graph.items():
        here = room(name)
        if here not in ALLOWED:  # the package __init__ and _compat wire the rooms together
            continue
        for target in targets:
            there = room(target)
            if there and there != here and there not in ALLOWED[here]:
                wrong.append(f"{name} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_nothing_imports_the_top_level_package(graph):
    assert not [name for name, targets in graph.items() if "deepagent_magics" in targets]


def test_modules_are_short_and_say_what_they_are():
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
    undocumented = [name for name, path in modules().items() if not ast.get_docstring(ast.parse(path.read_text()))]
    assert not undocumented, f"modules without a docstring: {undocumented}"


def test_the_public_api():
    from deepagent_magics import DeepAgent, Event, KernelPool, Run, ScriptedLM, ShellInterpreter  # noqa: F401

    assert DeepAgent.__module__ == "deepagent_magics.core.agent"
    assert KernelPool.__module__ == "deepagent_magics.interpreters.pool.pool"


@pytest.mark.parametrize("old, name, new", [
    ("kernel_pool", "KernelPool", "deepagent_magics.interpreters.pool.pool"),
    ("delegation", "parse_verdict", "deepagent_magics.tools.delegation.verdict"),
    ("run", "Run", "deepagent_magics.core.run"),
    ("agent", "ShellInterpreterFactory", "deepagent_magics.interpreters.shell"),
    ("evaluate", "Metric", "deepagent_magics.tuning.examples"),
    ("workspace", "Workspace", "deepagent_magics.core.workspace"),
])
def test_old_import_paths_work_with_a_deprecation_warning(old, name, new):
    sys.modules.pop(f"deepagent_magics.{old}", None)
    with pytest.warns(DeprecationWarning, match=f"deepagent_magics.{old} moved to"):
        module = importlib.import_module(f"deepagent_magics.{old}")
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_names_that_became_packages_keep_their_names():
    """magics, tools, records and display are packages now; what was imported from them still is, silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from deepagent_magics.display import choose_mode, show_run  # noqa: F401
        from deepagent_magics.magics import AgentFailed, DeepAgentMagics, interpolate  # noqa: F401
        from deepagent_magics.records import RunRecorder, load_record, replay, runs_dir  # noqa: F401
        from deepagent_magics.tools import edit_file, write_file, write_todos  # noqa: F401
