"""core/run/event_kinds.py: every event kind the package emits is declared there, once."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from deepagent_magics.core.run import event_kinds

PACKAGE = Path(event_kinds.__file__).resolve().parents[2]


def _emits():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "emit" and node.args:
                yield path, node.args[0]


def test_every_emitted_kind_is_a_declared_kind():
    found = 0
    for path, arg in _emits():
        assert not isinstance(arg, ast.Constant), f"{path}: emit a kind from event_kinds, not the string {arg.value!r}"
        if isinstance(arg, ast.Name):
            module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
            value = getattr(importlib.import_module(module), arg.id, None)
            if isinstance(value, str):
                found += 1
                assert value in event_kinds.KINDS, f"{module}: {arg.id}={value!r} is not in event_kinds"
    assert found >= 15  # the walker sees the package's emits


def test_kinds_are_unique_and_transient_ones_are_kinds():
    names = [name for name in vars(event_kinds) if name.isupper() and isinstance(getattr(event_kinds, name), str)]
    values = [getattr(event_kinds, name) for name in names]
    assert len(values) == len(set(values))
    assert event_kinds.TRANSIENT <= event_kinds.KINDS
