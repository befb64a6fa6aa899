"""The house keeps its shape: layers point one way, no import cycle, short modules with docstrings,
the public API at the top, and the old import paths still working with a warning."""

from __future__ import annotations

import ast
import importlib
import re
import sys
import warnings
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "deepagent_magics"
MAX_LINES = 400

MAX_MODULES = 16  # per folder

# The core's rooms, bottom to top: each may import only the rooms below it (docs/architecture.md).
CORE_ROOMS = ["core.workspace", "core.run", "core.policy", "core.model", "core.loop"]

# Plain modules every room may import: the error family, the settings table and model text made safe to show
# (errors.py, settings.py, safe_text.py), a package's names on first use (first_use.py), its old module paths
# (_compat.py) and a coroutine run from synchronous code (coroutines.py); they import nothing of the package
# but each other (settings -> errors).
SHARED = {"errors", "settings", "safe_text", "first_use", "_compat", "coroutines"}

# What each room may import from the package (besides itself, `SHARED` and the standard library).
ALLOWED = {
    "errors": set(),
    "settings": {"errors"},
    "safe_text": set(),
    "coroutines": set(),
    **{here: set(CORE_ROOMS[:i]) for i, here in enumerate(CORE_ROOMS)},
    "core": set(CORE_ROOMS),  # core/__init__.py: the core's public names
    "interpreters": {"core"},
    "tools": {"core", "interpreters"},
    "records": {"core"},
    "tracing": {"core"},
    "display": {"core", "records"},
    "tuning": {"core"},
    "magics": {"core", "interpreters", "tools", "display", "records", "tuning", "_compat"},  # its old module names
    "cli": {"core", "interpreters", "tools", "display", "records", "tuning", "testing", "acp"},
    "server": {"core", "records"},
    "mcp": {"core", "interpreters", "records"},  # interpreters: a cancelled task's code is cut short
    "acp": {"core", "records", "server", "interpreters"},  # its prompts are the run API's cells
    # (server.launch.cell_code); interpreters: the keeper ends its own kernel with the host
    "demos": {"testing"},
    "testing": set(),
    "testing_provider": set(),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules ``name`` imports, at any level (``if TYPE_CHECKING`` imports count too: a
    cycle that closes only for the type checker still means the code cannot be read bottom-up), and
    those its ``ON_FIRST_USE`` names come from (first_use.py: imported when a name is first used)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "ON_FIRST_USE" for t in node.targets):
            found.update(f"{package}.{where.value}" for where in node.value.values if f"{package}.{where.value}" in known)
        elif isinstance(node, ast.Import):
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
    """``core.<room>`` inside the core, else the top-level subpackage (or module) of the package."""
    parts = name.split(".")
    if len(parts) > 2 and parts[1] == "core":
        return f"core.{parts[2]}"
    return parts[1] if len(parts) > 1 else ""


def allowed(here: str, there: str) -> bool:
    permitted = ALLOWED[here] | (SHARED if here not in SHARED else set())
    return there == here or there in permitted or (there.startswith("core.") and "core" in permitted)


def test_the_graph_sees_imports(graph):
    """The walker itself: it must see relative, absolute and function-level imports."""
    assert "deepagent_magics.core.run.run" in graph["deepagent_magics.core.loop.agent"]
    assert "deepagent_magics.interpreters.kernel" in graph["deepagent_magics.tools.delegation.subagent"]
    assert "deepagent_magics.display.dashboard" in graph["deepagent_magics.display.show"]  # imported in a function
    assert "deepagent_magics.core.loop.agent" in graph["deepagent_magics.core"]  # a name given on first use


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
            if there and not allowed(here, there):
                wrong.append(f"{name} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_the_core_rooms_are_stacked_one_way(graph):
    """The walker applies the core's order: a lower room importing a higher one is caught."""
    assert not allowed("core.run", "core.policy") and allowed("core.loop", "core.run")
    assert allowed("tools", "core.loop") and not allowed("core.loop", "tools")
    assert allowed("core.workspace", "errors") and allowed("magics", "settings") and allowed("settings", "errors")
    assert not allowed("errors", "settings") and not allowed("settings", "core") and not allowed("errors", "core")


def test_no_folder_holds_more_than_a_room_should():
    counts: dict[Path, int] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            counts[path.parent] = counts.get(path.parent, 0) + 1
    crowded = {str(folder.relative_to(PACKAGE)): n for folder, n in counts.items() if n > MAX_MODULES}
    assert not crowded, f"folders over {MAX_MODULES} modules: {crowded}"


def test_a_file_name_repeats_only_for_one_idea_at_two_layers():
    """Two modules may share a file name only when they are the same idea at two layers, and then each
    one's docstring names the other (``tools/memory.py``), so a reader knows which one to open."""
    by_name: dict[str, list[Path]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            by_name.setdefault(path.name, []).append(path)
    unexplained = []
    for paths in by_name.values():
        for path in paths:
            doc = ast.get_docstring(ast.parse(path.read_text())) or ""
            for other in paths:
                if other != path and str(other.relative_to(PACKAGE)) not in doc:
                    unexplained.append(f"{path.relative_to(PACKAGE)} does not name {other.relative_to(PACKAGE)}")
    assert not unexplained, "\n".join(unexplained)


def test_nothing_imports_the_top_level_package(graph):
    assert not [name for name, targets in graph.items() if "deepagent_magics" in targets]


def test_modules_are_short_and_say_what_they_are():
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
    undocumented = [name for name, path in modules().items() if not ast.get_docstring(ast.parse(path.read_text()))]
    assert not undocumented, f"modules without a docstring: {undocumented}"


def test_the_public_api():
    from deepagent_magics import DeepAgent, Event, KernelPool, Run, ScriptedLM, ShellInterpreter  # noqa: F401

    assert DeepAgent.__module__ == "deepagent_magics.core.loop.agent"
    assert KernelPool.__module__ == "deepagent_magics.interpreters.pool.pool"


@pytest.mark.parametrize("old, name, new", [
    ("kernel_pool", "KernelPool", "deepagent_magics.interpreters.pool.pool"),
    ("delegation", "parse_verdict", "deepagent_magics.tools.delegation.verdict"),
    ("run", "Run", "deepagent_magics.core.run.run"),
    ("agent", "ShellInterpreterFactory", "deepagent_magics.interpreters.shell"),
    ("evaluate", "Metric", "deepagent_magics.tuning.examples"),
    ("workspace", "Workspace", "deepagent_magics.core.workspace.workspace"),
    ("magics.arguments", "interpolate", "deepagent_magics.magics.inputs.interpolation"),
    ("core.run.model_text", "markdown_html", "deepagent_magics.safe_text"),
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


def test_docstrings_name_modules_that_exist():
    """A docstring's `module` or `module.name` (single backticks) names a module of the package that exists
    and, after it, a name that module defines; a module renamed leaves no docstring pointing at its old name."""
    from deepagent_magics._compat import MOVED

    found = modules()
    leaves = {name.rpartition(".")[2] for name in found} | {name.split(".")[-2] for name in found if "." in name}
    old = {moved.rpartition(".")[2]: MOVED[moved][0] for moved in MOVED if moved.rpartition(".")[2] not in leaves}
    wrong = []
    for name, path in found.items():
        if name == "deepagent_magics._compat":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for reference in re.findall(r"(?<!`)`([a-z_][\w.]*)`(?!`)", ast.get_docstring(node) or ""):
                parts = reference.split(".")
                if parts[0] in old:
                    wrong.append(f"{name}: `{reference}` (that module is {old[parts[0]]} now)")
                    continue
                for k in range(len(parts), 0, -1):
                    suffix = ".".join(parts[:k])
                    targets = [found[m] for m in found if m.endswith("." + suffix)]
                    if targets:
                        rest = parts[k:]
                        if rest and not any(re.search(rf"^(?:def |class |async def )?{rest[0]}\b", target.read_text(),
                                                      re.M) for target in targets):
                            wrong.append(f"{name}: `{reference}` ({suffix} defines no {rest[0]})")
                        break
    assert not wrong, "\n".join(wrong)


def _strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant of a module that is not a docstring: what its code uses as data or says."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def named_tools(text: str, names: set[str]) -> list[str]:
    """The tools ``text`` names: as a whole (``"delegate"``), called (``delegate(``) or quoted (`` `delegate` ``)."""
    return [name for name in names if text == name or f"`{name}`" in text
            or re.search(rf"(?<![\w.]){re.escape(name)}\(", text)]


def test_the_core_names_no_tool_of_the_rooms_above():
    """What a tool is called, where its line goes in the prompt, what rule approval applies to it, what the
    model is told to call: each is the tool's capability's (core/loop/capability.py), never the core's."""
    from deepagent_magics import standard_extensions

    names = {tool.__name__ for tool in standard_extensions().builtin_tools()}
    assert {"write_todos", "delegate", "grep", "history"} <= names
    found = [f"{path.relative_to(PACKAGE)}:{line}: {named_tools(text, names)} in {text[:60]!r}"
             for path in sorted((PACKAGE / "core").rglob("*.py")) for line, text in _strings(path)
             if named_tools(text, names)]
    assert not found, "\n".join(found)


def test_the_tool_name_rule_sees_names_as_data_calls_and_quotes():
    names = {"delegate", "ls"}
    assert named_tools("delegate", names) == ["delegate"] and named_tools("use `ls` here", names) == ["ls"]
    assert named_tools("then read_skill('x') or ls()", names) == ["ls"]
    assert named_tools("a tool's delegated work, tools.ls(", names) == []


def private_imports(name: str, path: Path, known: set[str]) -> list[str]:
    """``from <another module of the package> import _name``: a name its module keeps to itself, taken across."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")
            target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target not in known or target == name:
            continue
        found += [f"{name} imports {alias.name} from {target}" for alias in node.names
                  if alias.name.startswith("_") and not alias.name.startswith("__") and f"{target}.{alias.name}" not in known]
    return found


def test_no_private_name_crosses_a_module():
    """A module's ``_name`` is its own: another module that needs it asks for a public name (what the two share is
    then said where it is defined). A private module of a package (``_compat``) may be imported by the package."""
    known = set(modules())
    crossing = [line for name, path in modules().items() for line in private_imports(name, path, known)]
    assert not crossing, "\n".join(crossing)


def test_the_private_import_rule_sees_relative_and_absolute_imports(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text("from .other import _hidden, shown\nfrom deepagent_magics.core.run.run import _thing\n")
    known = {"deepagent_magics.core.run.other", "deepagent_magics.core.run.run", "deepagent_magics.core.run.mod"}
    assert private_imports("deepagent_magics.core.run.mod", source, known) == [
        "deepagent_magics.core.run.mod imports _hidden from deepagent_magics.core.run.other",
        "deepagent_magics.core.run.mod imports _thing from deepagent_magics.core.run.run"]


TESTS = Path(__file__).resolve().parent
MIRROR = TESTS / "mirror.toml"


def mirror_of(path: Path) -> Path:
    """The test module of a package module: ``tests/<path>/test_<name>.py`` (``__init__`` -> ``test_init``)."""
    relative = path.relative_to(PACKAGE)
    return TESTS / relative.parent / f"test_{relative.stem.strip('_')}.py"


def test_every_module_is_mirrored_or_listed():
    """Each module has its test module (tests/<path>/test_<name>.py), which imports it or names it in its docstring
    (a magic's tests drive it through the shell), or is listed in tests/mirror.toml: with no behaviour of its own
    (no function, no class) and why, or still pending."""
    import tomllib

    listed = tomllib.loads(MIRROR.read_text())
    no_behaviour, pending = listed["no_behaviour"], listed.get("pending", {})
    wrong = []
    for name, path in modules().items():
        relative = path.relative_to(PACKAGE).as_posix()
        mirror = mirror_of(path)
        defines = any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      for node in ast.walk(ast.parse(path.read_text())))
        if mirror.exists():
            if relative in no_behaviour or relative in pending:
                wrong.append(f"{relative} has {mirror.relative_to(TESTS.parent)}: take it off tests/mirror.toml")
            elif name not in _imported_names(mirror) and relative not in _docstring(mirror):
                wrong.append(f"{mirror.relative_to(TESTS.parent)} neither imports {name} nor names {relative}")
        elif relative in no_behaviour:
            if defines:
                wrong.append(f"{relative} defines functions or classes: it has behaviour; write "
                             f"{mirror.relative_to(TESTS.parent)}")
        elif relative not in pending:
            wrong.append(f"{relative}: write {mirror.relative_to(TESTS.parent)} (or, if it has no behaviour of its own, "
                         "list it in tests/mirror.toml with why)")
    stale = sorted(set(no_behaviour) | set(pending) - {p.relative_to(PACKAGE).as_posix() for p in modules().values()})
    wrong += [f"tests/mirror.toml lists {each}, which is no module of the package" for each in stale
              if not (PACKAGE / each).exists()]
    assert not wrong, "\n".join(wrong)


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def _imported_names(test: Path) -> set[str]:
    """The package modules ``test`` imports by name (``import deepagent_magics.x``, ``from deepagent_magics.x
    import ...``, ``from deepagent_magics import x``)."""
    found = set()
    for node in ast.walk(ast.parse(test.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


BROAD = {"Exception", "BaseException"}


def unexplained_handlers(source: str) -> list[int]:
    """The lines of ``except Exception`` / ``except BaseException`` / bare ``except`` handlers that neither re-raise
    nor say, in a comment on the ``except`` line, why they must catch everything (and what they expect)."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ExceptHandler):
            continue
        caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
        names = {getattr(each, "id", getattr(each, "attr", "")) if each is not None else "Exception" for each in caught}
        if not names & BROAD or any(isinstance(inner, ast.Raise) for inner in ast.walk(node)):
            continue
        if "#" not in lines[node.lineno - 1]:
            found.append(node.lineno)
    return found


def test_every_broad_handler_says_what_it_expects_or_why_it_must_be_broad():
    """A handler that catches everything and goes on hides the bugs it did not mean to catch: it says why it must
    be broad (what it expects: a user's object raising anything, a kernel gone), or it names the error it means."""
    found = [f"{name}:{line}" for name, path in modules().items() for line in unexplained_handlers(path.read_text())]
    assert not found, "\n".join(found)


def test_the_broad_handler_rule_sees_silent_handlers():
    source = ("try:\n    f()\nexcept Exception:\n    pass\n"
              "try:\n    f()\nexcept BaseException as exc:  # re-raised in the caller's thread\n    keep(exc)\n"
              "try:\n    f()\nexcept Exception:\n    raise\n"
              "try:\n    f()\nexcept:\n    pass\n"
              "try:\n    f()\nexcept (ValueError, Exception):\n    pass\n")
    assert unexplained_handlers(source) == [3, 15, 19]
