"""interpreters/provenance.py: which names a step binds, read from its code, and whose names are whose (the tracker
through real runs: tests/adversarial/test_provenance.py, tests/magics/test_changes.py)."""

from __future__ import annotations

import ast

from deepagent_magics.interpreters.provenance import (
    SCRATCH,
    UserCells,
    assigned_names,
    imported_names,
    is_ipython_name,
    is_scratch,
    loop_targets,
    scratch_prefix,
)

CODE = """
import numpy as np, os.path
from json import loads as parse
x = 1
a, (b, c) = 1, (2, 3)
del gone
for i in range(3):
    pass
with open('f') as fh:
    pass
def f(p):
    inner = 1
    global g
class K:
    attr = 1
try:
    pass
except Exception as err:
    pass
[y for y in range(3)]
[(w := 1) for _ in range(1)]
match value:
    case {'k': 1, **rest}:
        pass
    case [first, *others]:
        pass
"""


def test_the_names_a_step_binds_at_the_top_level():
    assert assigned_names(ast.parse(CODE)) == {"np", "os", "parse", "x", "a", "b", "c", "gone", "i", "fh", "f", "g",
                                               "K", "err", "w", "rest", "first", "others"}


def test_imports_and_loop_names_apart():
    tree = ast.parse(CODE)
    assert imported_names(tree) == {"np", "os", "parse"}
    assert {"i", "fh"} <= loop_targets(tree) and "x" not in loop_targets(tree)
    assert imported_names(ast.parse("def f():\n    import os")) == set()


def test_ipython_and_scratch_names_are_not_the_users():
    assert all(is_ipython_name(name) for name in ("_", "__", "_i", "_i7", "_7", "_oh", "In", "Out"))
    assert not is_ipython_name("_sales") and not is_ipython_name("sales")
    assert is_scratch("_tmp_x") and is_scratch("_x") and not is_scratch("__name__") and not is_scratch("x")


def test_the_scratch_prefix_is_one_no_name_in_use_starts_with():
    assert scratch_prefix({}) == SCRATCH == "_tmp_"
    assert scratch_prefix({"_tmp_mine": 1}) == "_tmp2_"
    assert scratch_prefix({"_tmp_a": 1, "_tmp2_b": 2, 3: "not a str"}) == "_tmp3_"


def test_the_users_cells_are_watched_for_the_names_they_assign(ip):
    cells = UserCells(ip)
    cells.post_run_cell(type("R", (), {"info": type("I", (), {"raw_cell": "mode = 'fast'\n!echo hi"})()})())
    assert cells.since("mode", 0) and not cells.since("other", 0)
    cells.post_run_cell(type("R", (), {"info": type("I", (), {"raw_cell": "def (:"})()})())  # nothing
