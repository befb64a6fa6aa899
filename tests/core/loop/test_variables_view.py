"""The variables view: ranked (the task's names, the user's newest first, earlier runs' names last), within its
budget, never cut mid-line, every user variable at least named; and safe on whatever a notebook holds."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.core.loop.inputs_view import VARIABLES_HEAD
from deepagent_magics.core.loop.variables import BUDGET, LIST_ALL, MAX_COLUMNS, MAX_NAMED, describe, variables_view
from deepagent_magics.testing import ScriptedLM


def frame(columns, rows=3):
    return pd.DataFrame(np.zeros((rows, len(columns))), columns=columns)


def test_the_names_the_task_mentions_come_first_then_the_users_newest_first_then_earlier_runs():
    ns = {"old": 1, "sales": frame(["q1", "q2"]), "k": 5, "res": [1], "newest": "x", "costs": frame(["c"])}
    view = variables_view(ns, task="Compare `costs` with sales by quarter", agent_names={"k", "res"})
    lines = [line for line in view.splitlines() if not line.startswith("    ")]  # a mentioned table's rows
    assert [line.split(":")[0] for line in lines[:4]] == ["- costs", "- sales", "- newest", "- old"]
    assert lines[-1] == "Made by earlier agent runs: k, res"  # names only, on one line
    assert "- k:" not in view and "- res:" not in view


def test_a_table_the_task_mentions_shows_its_first_rows_and_one_it_does_not_only_its_columns():
    units = pd.DataFrame({"region": ["North", "South", "East", "West"], "units": [3, 5, 7, 9]})
    view = variables_view({"units": units, "other": units.copy()}, task="Sum `units`")
    mentioned, other = view.split("\n- other")
    assert "North" in mentioned and "South" in mentioned and "East" in mentioned and "West" not in mentioned
    assert "North" not in other
    assert all(not line or line.startswith(("- ", "    ")) for line in mentioned.splitlines())


def test_a_table_shows_every_column_with_its_dtype_up_to_the_bound_then_how_many_more():
    wine = frame([f"feature_{n}" for n in range(13)] + ["proline"]).assign(target=1)
    text = describe(wine)
    assert "proline" in text and text.endswith("; int64: target")  # the column RLM's preview hid
    wide = frame([f"c{n}" for n in range(10_000)], rows=2)
    text = describe(wide)
    assert f"c{MAX_COLUMNS - 1}" in text and f"c{MAX_COLUMNS}," not in text
    assert text.endswith(f"... {10_000 - MAX_COLUMNS:,} more (.columns lists them)") and len(text) < 1200


def test_column_names_that_are_not_strings_are_shown_safely():
    class Odd:
        def __str__(self):
            raise RuntimeError("no str")

        __repr__ = __str__

    df = pd.DataFrame([[1, 2, 3, 4]], columns=[0, ("a", 1), Odd(), "with space, and: colon"])
    text = describe(df)
    assert "0" in text and "('a', 1)" in text and "<Odd>" in text and "'with space, and: colon'" in text


def test_five_hundred_variables_stay_within_the_budget_and_every_one_is_named_up_to_the_bound():
    ns = {f"var_{n}": list(range(50)) for n in range(500)}
    view = variables_view(ns)
    described = [line for line in view.splitlines() if line.startswith("- var_")]
    assert sum(len(line) + 1 for line in described) <= BUDGET
    named = [name for name in ns if f"{name}:" in view or f" {name}," in view or view.endswith(f" {name}")
             or f" {name}\n" in view]
    assert len(named) == MAX_NAMED and all(f"var_{n}" in named for n in range(500 - MAX_NAMED, 500))  # newest
    assert f"... and {500 - MAX_NAMED:,} more variables: {LIST_ALL} lists them" in view
    assert all(line.count("var_") <= 1 or line.startswith("- also: ") for line in view.splitlines())


class Hostile:
    """Every way of looking at it hangs (fails the test) or raises."""

    calls = []

    def _hang(self, *args):
        Hostile.calls.append("touched")
        raise AssertionError("the view ran the object's own code")

    __repr__ = __str__ = __len__ = __iter__ = _hang

    @property
    def columns(self):
        return self._hang()

    @property
    def shape(self):
        return self._hang()

    @property
    def dtypes(self):
        return self._hang()

    def __getattr__(self, name):
        return self._hang()


class HostileList(list):
    def __len__(self):
        time.sleep(60)

    def __iter__(self):
        time.sleep(60)


class HostileStr(str):
    def __repr__(self):
        time.sleep(60)

    def __len__(self):
        time.sleep(60)


def test_values_whose_repr_len_or_columns_raise_or_hang_are_described_without_running_their_code():
    Hostile.calls.clear()
    ns = {"h": Hostile(), "hl": HostileList([1, 2, 3]), "hs": HostileStr("abc"), "n": 1}
    done = []
    thread = threading.Thread(target=lambda: done.append(variables_view(ns, task="use h hl hs")), daemon=True)
    thread.start()
    thread.join(10)
    assert done, "the view hung on a hostile value"
    assert Hostile.calls == []
    view = done[0]
    assert "- h: tests.Hostile" in view and "- hl: tests.HostileList, 3 items" in view  # the top package's name
    assert "- hs: tests.HostileStr, 3 chars" in view


def test_a_fifty_megabyte_string_and_unicode_names_are_described_briefly():
    ns = {"texte_été": "é" * 50_000_000, "数据": frame(["列"]), "ñ": 1}
    started = time.perf_counter()
    view = variables_view(ns, task="Lis texte_été et 数据")
    assert time.perf_counter() - started < 5  # a guard against copying, not a benchmark
    assert view.splitlines()[0].startswith("- texte_été: str, 50,000,000 chars = 'ééé")
    assert view.splitlines()[1] == "- 数据: pandas.DataFrame, shape (3, 1), columns float64: 列"
    assert len(view) < 600


def test_the_run_passes_the_task_and_the_earlier_runs_names_to_the_view(tmp_path):
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    ns = {"zeta": frame(["a"]), "k": 3, "alpha": 1}
    DeepAgent(lm=lm, workspace=tmp_path, max_depth=0).run("Look at zeta", ns, agent_names=["k"])
    user = lm.requests[0]["user"]
    view = user.split(VARIABLES_HEAD + "\n", 1)[1].split("\n\n", 1)[0]
    entries = [line for line in view.splitlines() if not line.startswith("    ")]  # zeta's first rows
    assert entries == ["- zeta: pandas.DataFrame, shape (3, 1), columns float64: a", "- alpha: int = 1",
                       "Made by earlier agent runs: k"]


@pytest.mark.parametrize("budget", [200, 800])
def test_the_budget_is_configurable_and_lines_past_it_are_compact_then_named(budget):
    ns = {f"t{n}": frame([f"column_{m}" for m in range(20)]) for n in range(10)}
    view = variables_view(ns, budget=budget)
    full = [line for line in view.splitlines() if "columns" in line]
    compact = [line for line in view.splitlines() if line.endswith("shape (3, 20)")]
    assert sum(len(line) + 1 for line in full + compact) <= budget
    assert all(f"t{n}" in view for n in range(10))


BC_COLUMNS = [f"mean {part}" for part in ("radius", "texture", "perimeter", "area", "smoothness")] + \
             [f"worst {part}" for part in ("radius", "texture", "perimeter", "area", "smoothness")] + ["target"]


def test_tables_that_share_columns_list_them_once_on_the_table_they_came_from():
    bc = pd.DataFrame(np.zeros((20, len(BC_COLUMNS))), columns=BC_COLUMNS).astype({"target": "int64"})
    bc_X = bc.drop(columns="target")  # made later by an agent's split, as in the real session
    ns = {"bc": bc, "bc_X": bc_X, "X_train": bc_X.iloc[:15], "X_test": bc_X.iloc[15:], "other": frame(["a", "b"])}
    view = variables_view(ns, task="plot the ROC curve")
    assert view.count("'mean radius'") + view.count("mean radius,") == 1, view  # the columns said once ...
    line = {entry.split(":")[0]: entry for entry in view.splitlines()}
    assert "'worst smoothness'; int64: target" in line["- bc"]  # ... on the source table, with its target
    assert line["- X_test"].endswith("shape (5, 10), the columns of `bc` but target")
    assert line["- bc_X"].endswith("the columns of `bc` but target")
    assert "columns float64: a, b" in line["- other"]  # an unrelated table keeps its own
    same = variables_view({"left": frame(["a", "b", "c"]), "right": frame(["a", "b", "c"])}, task="join")
    assert same.splitlines()[0].endswith("same 3 columns as `left`")


def test_closed_files_and_other_dead_objects_are_left_out(tmp_path):
    import weakref

    closed = open(tmp_path / "x.txt", "w")
    closed.close()
    still_open = open(tmp_path / "y.txt", "w")

    class Thing:
        pass

    thing = Thing()
    gone = weakref.ref(thing)
    del thing
    done = (n for n in range(1))
    list(done)
    try:
        view = variables_view({"f": closed, "g": still_open, "gone": gone, "done": done, "kept": 1})
    finally:
        still_open.close()
    names = [line.split(":")[0] for line in view.splitlines()]
    assert names == ["- kept", "- g"], view


def test_what_an_earlier_agent_run_imported_is_listed_as_imported_not_as_the_users(ip):
    ip.run_cell("import os\nfrom collections import Counter as UsersCounter", store_history=True)
    ip.user_ns["lm"] = ScriptedLM([("Work.", "import re, json\nfrom statistics import mean\n"
                                             "def helper(x):\n    return x\nresult_n = mean([1, 2])"),
                                   ("Done.", "SUBMIT(result='ok')")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nfirst").raise_error()
    ip.user_ns["lm"] = lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nsecond").raise_error()
    view = lm.requests[0]["user"].split(VARIABLES_HEAD)[1]
    lines = {line.split(":")[0]: line for line in view.strip().splitlines()}
    assert lines["Modules"] == "Modules: os"  # the user's import, not the agent's
    assert lines["Functions and classes"] == "Functions and classes: UsersCounter"
    assert lines["Imported by earlier agent runs"] == "Imported by earlier agent runs: re, json, mean"
    assert lines["Made by earlier agent runs"] == "Made by earlier agent runs: result_n, helper" or \
        lines["Made by earlier agent runs"] == "Made by earlier agent runs: helper, result_n"
