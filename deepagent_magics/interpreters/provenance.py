"""Provenance: which names a run made or rebound in the live namespace, and which of the user's
objects it changed in place, step by step (``run.changes``), so that ``%deepagent_why`` can say
who made a name and ``%deepagent_undo`` can take a run back.

The `ShellInterpreter` calls a `Tracker` around each step. Names: the namespace's references
before and after the step (no copies) say what the step created, rebound or deleted. Objects:
the user's lists, dicts, sets, arrays, DataFrames and Series that a step's code names (as a
name, or as a string such as ``globals()['df']``; every one of them when the code reaches the
namespace itself) are fingerprinted before and after it (`core.policy.fingerprint`: a digest, never
a deep copy of large data) and, when no bigger than the run's ``undo_limit``, copied once so
that undo can restore them. At the end of the run a last look at every fingerprinted object
catches a change made through another route (a function defined earlier, an alias).

Each change is a dict: ``name``, ``kind`` (created, rebound, deleted, changed), ``step`` (None
when only the last look saw it), ``type``, and for the undo its private ``_value`` / ``_object``
(`fingerprint.Ref`: a big object is not kept alive by the run) / ``_snapshot``, ``_tick`` (when, in
the order of `tick`) and ``_left`` (the fingerprint of what the run left: the object it changed, or
the value of a name it created) (none of them in the record).

`UserCells` watches the user's own cells (IPython's ``post_run_cell``): the names each one
assigns, read from its code, with the `tick` of the cell. Undo asks it whether the user set a
name again after a run, even to the very same object (``mode = 'fast'`` is the interned string
the run left there).
"""

from __future__ import annotations

import ast
import itertools
import logging
import re
import time
from typing import Any, Iterator

from ..core.policy import fingerprint as fp
from ..core.run.run import Run

log = logging.getLogger(__name__)
_MISSING = object()
DEFAULT_UNDO_LIMIT = 10_000_000  # bytes: the biggest object copied so that undo can restore it
LEFT_LIMIT = 200_000_000  # bytes: the biggest value a run created that is fingerprinted at its end
NAMESPACE_CALLS = {"globals", "vars", "locals"}
tick = itertools.count(1).__next__  # one order for the runs' changes and the user's cells
SCRATCH = "_tmp_"  # the prefix the prompt gives for throwaway names; `scratch_prefix` picks one no name in use has
# IPython's own names in the namespace (input and output history, the last results): never the user's
IPYTHON_NAMES = re.compile(r"_{1,3}|_i{1,3}|_i\d+|_\d+|_ih|_oh|_dh|_exit_code|In|Out")


class Tracker:
    """What one run does to the namespace, recorded on ``run.changes`` as it happens."""

    def __init__(self, run: Run | None, namespace: dict[str, Any], before: dict[str, Any],
                 limit: int = DEFAULT_UNDO_LIMIT):
        self.run = run
        self.namespace = namespace
        self.before = before  # the user's bindings when the run started (references only)
        self.limit = limit
        self.prints: dict[str, str] = {}  # user name -> last fingerprint of its original object
        self.snapshots: dict[str, Any] = {}
        self._step_refs: dict[str, Any] = {}
        self._mentioned: set[str] = set()
        self._loop_names: set[str] = set()
        self._imported: set[str] = set()
        self.changes: list[dict[str, Any]] = run.changes if run is not None else []

    # ------------------------------------------------------------ around a step
    def before_step(self, tree: ast.AST) -> None:
        try:
            self._before_step(tree)
        except Exception:  # provenance never breaks a step
            log.exception("provenance: before the step")

    def after_step(self, step: int | None, injected: dict[str, Any]) -> None:
        try:
            self._after_step(step, injected)
        except Exception:  # provenance is a record of the step: whatever breaks it is logged, never the step's failure
            log.exception("provenance: after the step")

    def _before_step(self, tree: ast.AST) -> None:
        self._step_refs = dict(self.namespace)
        self._mentioned = self._mentions(tree)
        self._loop_names = loop_targets(tree)
        self._imported = imported_names(tree)
        for name in sorted(self._mentioned):
            if name in self.prints:
                continue
            obj = self.before.get(name, _MISSING)
            if obj is _MISSING or fp.kind(obj) is None:
                continue
            self.prints[name] = fp.fingerprint(obj) or ""
            saved = fp.snapshot(obj, self.limit)
            if saved is not None:
                self.snapshots[name] = saved

    def _after_step(self, step: int | None, injected: dict[str, Any]) -> None:
        namespace, refs = self.namespace, self._step_refs
        for name, value in list(namespace.items()):
            if type(name) is not str:  # globals()[1] = ...: not a name the user could use or undo
                continue
            if refs.get(name, _MISSING) is value or name in injected or name == "__builtins__":
                continue
            kind = "rebound" if name in self.before else "created"
            self._add(name, kind, step, value=value)
            if name in self._imported or type(value).__name__ == "module":
                self.changes[-1]["imported"] = True  # not a result of the run: not "created" in its summary
            if name in self._loop_names or self.changes[-1].get("imported"):
                self.changes[-1]["loop"] = True  # a loop variable, an import: not a result of the run
        for name in [name for name in refs if type(name) is str and name not in namespace and name not in injected]:
            self._add(name, "deleted", step)
        for name in sorted(self._mentioned & set(self.prints)):
            self._look(name, step)
        self._step_refs = {}  # no reference to the namespace's values outlives the step

    def finish(self) -> None:
        """Before the user's bindings are restored: a last look at every fingerprinted object."""
        for name in list(self.prints):
            self._look(name, None)

    def restored(self, names: set[str], removed: set[str], scratch: set[str] = frozenset()) -> None:
        """After the interpreter restored the user's ``names`` and took away ``removed`` (builtin shadows) and
        ``scratch`` (the agent's `_`-named variables)."""
        for change in self.changes:
            if change["kind"] in ("rebound", "deleted") and change["name"] in names:
                change["restored"] = True
            if change["kind"] == "created" and change["name"] in removed | scratch:
                change["restored"] = True
                if change["name"] in scratch:
                    change["scratch"] = True
        try:
            self._remember_what_it_left()
        except Exception:  # provenance is a record of the run: whatever breaks it is logged, never the run's failure
            log.exception("provenance: at the end of the run")
        self.before, self.prints, self.snapshots, self._step_refs = {}, {}, {}, {}  # the run is over

    def _remember_what_it_left(self) -> None:
        """The fingerprint of what the run left: each object it changed, each value it created (undo
        takes back only what is still so)."""
        latest: dict[str, dict[str, Any]] = {}
        for change in self.changes:
            if change["kind"] == "changed":
                change["_left"] = self.prints.get(change["name"])
            elif change["kind"] == "created":
                latest[change["name"]] = change
        for name, change in latest.items():
            value = self.namespace.get(name, _MISSING)
            if change.get("restored") or value is _MISSING or not change["_value"].matches(value):
                continue
            if fp.kind(value) is not None:
                if fp.size_of(value, LEFT_LIMIT) <= LEFT_LIMIT:
                    change["_left"] = fp.fingerprint(value)
                else:
                    change["_too_big"] = True

    # ------------------------------------------------------------ helpers
    def _look(self, name: str, step: int | None) -> None:
        obj = self.before[name]
        now = fp.fingerprint(obj) or ""
        if now == self.prints[name]:
            return
        self.prints[name] = now
        if any(c["name"] == name and c["kind"] == "changed" for c in self.changes):
            return  # one entry per object: the first step that changed it
        self._add(name, "changed", step, obj=obj, snapshot=self.snapshots.get(name, _MISSING))

    def _add(self, name: str, kind: str, step: int | None, *, value: Any = _MISSING, obj: Any = _MISSING,
             snapshot: Any = _MISSING) -> None:
        target = value if value is not _MISSING else obj if obj is not _MISSING else None
        change: dict[str, Any] = {"name": name, "kind": kind, "step": step, "time": time.time(), "_tick": tick(),
                                  "type": type(target).__name__ if target is not None else None}
        if value is not _MISSING:
            change["_value"] = fp.Ref(value, self.limit)
        if obj is not _MISSING:
            change["_object"] = fp.Ref(obj, self.limit)
            change["restorable"] = snapshot is not _MISSING
            if snapshot is not _MISSING:
                change["_snapshot"] = snapshot
        self.changes.append(change)

    def _mentions(self, tree: ast.AST) -> set[str]:
        """The user's names the code names: as a name or a string; all of them if it reaches the namespace."""
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
                if node.id in NAMESPACE_CALLS:
                    return set(self.before)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                names.add(node.value)
            elif isinstance(node, ast.Attribute) and node.attr in ("user_ns", "__dict__"):
                return set(self.before)
        return names & set(self.before)


class UserCells:
    """The names the user's own cells assign, each with the `tick` of the last cell that did."""

    def __init__(self, shell: Any):
        self.shell = shell
        self.last: dict[str, int] = {}

    def post_run_cell(self, result: Any) -> None:
        """IPython's ``post_run_cell`` event (a ``%%deepagent`` cell assigns nothing: its run's changes are its own)."""
        try:
            raw = getattr(getattr(result, "info", None), "raw_cell", None)
            if not raw:
                return
            names = assigned_names(ast.parse(self.shell.transform_cell(raw)))
        except Exception:  # a cell that does not parse assigned nothing
            return
        now = tick()
        for name in names:
            self.last[name] = now

    def since(self, name: str, after: int) -> bool:
        """Whether a cell of the user's assigned ``name`` after ``after`` (a tick)."""
        return self.last.get(name, 0) > after


def assigned_names(tree: ast.AST) -> set[str]:
    """The global names a module's code binds or deletes: assignments, ``del``, loops, ``with ... as``,
    imports, definitions, ``:=``, ``except ... as``, ``match`` captures, and names a function declares
    ``global`` (not the locals of functions, classes and comprehensions)."""
    names: set[str] = set()

    def visit(node: ast.AST, top: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if top:
                names.add(node.name)
            for child in node.decorator_list:
                visit(child, top)
            for child in node.body:
                visit(child, False)
            return
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.Global):
            names.update(node.names)
        elif top and isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif top and isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name != "*")
        elif top and isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif top and isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif top and isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            for inner in ast.walk(node):  # only := binds outside a comprehension
                if top and isinstance(inner, ast.NamedExpr) and isinstance(inner.target, ast.Name):
                    names.add(inner.target.id)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, top)

    visit(tree, True)
    return names


def imported_names(tree: ast.AST) -> set[str]:
    """The global names a step binds with ``import`` (outside functions and classes)."""
    names: set[str] = set()
    for node in _module_level(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name != "*")
    return names


def _module_level(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` outside the bodies of functions, classes and lambdas."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def loop_targets(tree: ast.AST) -> set[str]:
    """The names a step binds as loop variables (``for k in ...``) or context managers (``with ... as f``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor)) else (
            [item.optional_vars for item in node.items if item.optional_vars is not None]
            if isinstance(node, (ast.With, ast.AsyncWith)) else [])
        for target in targets:
            names |= {each.id for each in ast.walk(target) if isinstance(each, ast.Name)}
    return names


# ------------------------------------------------------------------ whose names
def is_ipython_name(name: str, shell: Any = None) -> bool:
    """Whether ``name`` is IPython's own (``_i``, ``_oh``, ``_3``, ``__``, what the shell put in at start), not
    a name the user made: a run that rebinds one puts it back silently, never reporting it as the user's."""
    hidden = getattr(shell, "user_ns_hidden", None) or {}
    return name in hidden or bool(IPYTHON_NAMES.fullmatch(name))


def scratch_prefix(namespace: dict[str, Any] | None) -> str:
    """`SCRATCH`, or ``_tmp2_``, ``_tmp3_``, ...: the first prefix no name in ``namespace`` starts with, so a
    throwaway name the prompt suggests never clashes with one the user (or IPython) has."""
    taken = [key for key in list(namespace or ()) if type(key) is str and key.startswith("_tmp")]
    number = 1
    while True:
        prefix = SCRATCH if number == 1 else f"_tmp{number}_"
        if not any(key.startswith(prefix) for key in taken):
            return prefix
        number += 1


def is_scratch(name: str) -> bool:
    """A `_`-named variable (not a dunder): the agent's scratch, removed when its run ends."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
