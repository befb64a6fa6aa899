"""Undo undoes only the run's own doing, in a real InteractiveShell: what the user did after the run survives.

The user's later cells are real cells (``run_cell(..., store_history=True)``, as a kernel runs
them); the runs are ScriptedLM runs of ``%%deepagent``.
"""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.testing import ScriptedLM


def agent(ip, *steps):
    ip.user_ns["lm"] = ScriptedLM([*steps, ("Done.", "SUBMIT(result='done')")])
    ip.run_cell("%%deepagent --lm lm\nwork on my data", store_history=True).raise_error()
    return ip.user_ns["_deepagent_run"]


def cell(ip, code):
    ip.run_cell(code, store_history=True).raise_error()


def undo(ip, capsys, run_id=""):
    capsys.readouterr()
    ip.run_line_magic("deepagent_undo", run_id)
    return capsys.readouterr().out


def test_values_the_user_set_again_survive_even_when_they_are_the_very_same_objects(ip, capsys):
    agent(ip, ("Set.", "mode = 'fast'\nretries = 3\ndone = True\nlabel = None\nscratch = 'x'"))
    cell(ip, "mode = 'fast'\nretries = 3\ndone = True\nlabel = None")  # interned: the same objects the run left
    capsys.readouterr()
    ip.run_line_magic("deepagent_why", "mode")
    assert "you have set it since" in capsys.readouterr().out
    out = undo(ip, capsys)
    assert (ip.user_ns["mode"], ip.user_ns["retries"], ip.user_ns["done"]) == ("fast", 3, True)
    assert "label" in ip.user_ns and "scratch" not in ip.user_ns
    assert len(out.strip().splitlines()) == 1, out  # one line, naming what it kept
    assert "removed the names it created: scratch" in out
    assert all(name in out.split("kept")[1] for name in ("mode", "retries", "done", "label"))


def test_a_name_set_again_by_any_statement_of_a_later_cell_is_kept(ip, capsys):
    agent(ip, ("Set.", "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7"))
    cell(ip, "a += 0\nfor b in [2]:\n    pass\nimport math as c\n"
             "def helper():\n    global d\n    d = 4\nwith open(__file__ if '__file__' in dir() else '/dev/null') as e:\n"
             "    pass\n(f := 6)\ndef g_local():\n    g = 7")
    undo(ip, capsys)
    assert all(name in ip.user_ns for name in "abcdef")
    assert "g" not in ip.user_ns  # a local of a function is not the user's global `g`


def test_a_users_later_edit_is_kept_and_named(ip, capsys):
    ip.user_ns.update(rows=[1, 2, 3], table={"a": 1})
    agent(ip, ("Work.", "rows.append(4)\ntable['b'] = 2\nmade = [1]"))
    cell(ip, "rows.append(5)\nmade.append(2)")
    out = undo(ip, capsys)
    assert ip.user_ns["rows"] == [1, 2, 3, 4, 5]  # the user's 5 was not discarded
    assert ip.user_ns["made"] == [1, 2]  # an object the run made and the user changed since is the user's
    assert ip.user_ns["table"] == {"a": 1}  # what nobody touched since is restored
    assert "rows" in out and "made" in out and "changed since" in out and "by you" in out


def test_undoing_the_older_of_two_runs_first_never_brings_a_change_back(ip, capsys):
    ip.user_ns["rows"] = rows = [1, 2, 3]
    first = agent(ip, ("One.", "rows.append(4)"))
    second = agent(ip, ("Two.", "rows.append(5)"))
    out = undo(ip, capsys, first.id)
    assert rows == [1, 2, 3, 4, 5], out  # the older run's undo does not wipe the newer run's change
    assert second.id in out and "undo it first" in out
    out = undo(ip, capsys, second.id)
    assert rows == [1, 2, 3] and ip.user_ns["rows"] is rows  # the newer run taken back, and the older one's waiting change
    assert f"then, of run {first.id} (it waited on this one): restored in place: rows" in out
    for run in (first, second):
        with pytest.raises(UsageError, match="already undone"):
            ip.run_line_magic("deepagent_undo", run.id)


def test_undoing_a_run_keeps_a_name_a_later_run_changed(ip, capsys):
    first = agent(ip, ("Make.", "made = {'n': 1}"))
    agent(ip, ("Change.", "made['n'] = 2"))
    out = undo(ip, capsys, first.id)
    assert ip.user_ns["made"] == {"n": 2} and "undo it first" in out


def test_nested_containers_are_restored_in_place(ip, capsys):
    ip.user_ns["nested"] = nested = {"a": {"k": 1}, "l": [1, [2]], "t": ([0],)}
    inner, deep, in_tuple = nested["a"], nested["l"][1], nested["t"][0]
    agent(ip, ("Deep.", "nested['a']['k'] = 2\nnested['l'][1].append(3)\nnested['t'][0].append(1)\n"
                        "nested['new'] = 1\nnested['l'][0] = {'replaced': True}"))
    undo(ip, capsys)
    assert nested == {"a": {"k": 1}, "l": [1, [2]], "t": ([0],)}
    assert nested["a"] is inner and inner == {"k": 1}  # the user's reference to the inner dict sees the restore
    assert nested["l"][1] is deep and deep == [2] and nested["t"][0] is in_tuple and in_tuple == [0]


def test_an_inner_object_the_run_replaced_is_put_back_itself(ip, capsys):
    ip.user_ns["nested"] = nested = {"a": {"k": 1}}
    inner = nested["a"]
    agent(ip, ("Swap.", "nested['a'] = {'k': 99}"))
    undo(ip, capsys)
    assert nested["a"] is inner and inner == {"k": 1}


def test_attribute_changes_on_the_users_objects_are_restored(ip, capsys):
    cell(ip, "class Config:\n    pass\n\nclass Point:\n    __slots__ = ('x', 'y')\n\n"
             "cfg = Config()\ncfg.mode = 'slow'\ncfg.items = [1]\ncfg.sub = Config()\ncfg.sub.level = 1\n"
             "p = Point()\np.x = 1")
    cfg, items, sub, p = (ip.user_ns[name] for name in ("cfg", "cfg", "cfg", "p"))
    items, sub = cfg.items, cfg.sub
    run = agent(ip, ("Tweak.", "cfg.mode = 'fast'\ncfg.extra = 1\ncfg.items.append(2)\ncfg.sub.level = 2\n"
                               "p.x = 5\np.y = 6"))
    assert {("cfg", "changed"), ("p", "changed")} <= {(c["name"], c["kind"]) for c in run.changes}
    out = undo(ip, capsys)
    assert cfg.mode == "slow" and not hasattr(cfg, "extra") and cfg.items is items and items == [1]
    assert cfg.sub is sub and sub.level == 1
    assert p.x == 1 and not hasattr(p, "y")
    assert "restored in place" in out and "cfg" in out and "p" in out


def test_an_attribute_change_that_cannot_be_restored_is_named(ip, capsys):
    cell(ip, "import threading\nclass Holder:\n    pass\nholder = Holder()\nholder.lock = threading.Lock()\n"
             "holder.mode = 'slow'")
    agent(ip, ("Tweak.", "holder.mode = 'fast'"))
    out = undo(ip, capsys)
    assert "NOT restored" in out and "holder" in out  # a lock cannot be copied: no snapshot, but named
