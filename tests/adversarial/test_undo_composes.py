"""Undo composes (issue 30): undoing several runs in any order ends where undoing them newest-first would,
and a change an older run's undo kept because a later run touched it is taken back when that later run is.

Real InteractiveShell, real ``%%deepagent`` runs (ScriptedLM), the user's own cells as real cells.
"""

from __future__ import annotations

import itertools

import pytest
from IPython.core.error import UsageError

from tests.adversarial.test_undo_only_the_run import agent, cell


def undo(ip, capsys, run_id):
    capsys.readouterr()
    ip.run_line_magic("deepagent_undo", run_id)
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1, out  # whatever it did, one line says it
    return out


def state(ip, *names):
    return {name: ip.user_ns.get(name, "<unbound>") for name in names}


# ------------------------------------------------------------------ the issue's case
@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=["older-first", "newer-first"])
def test_two_appends_undone_in_either_order_give_back_the_users_list(ip, capsys, order):
    ip.user_ns["items"] = items = ["a"]
    runs = [agent(ip, ("B.", "items.append('b')")), agent(ip, ("C.", "items.append('c')"))]
    assert items == ["a", "b", "c"]
    first, second = (runs[i] for i in order)
    out = undo(ip, capsys, first.id)
    if order == (0, 1):
        assert items == ["a", "b", "c"] and runs[1].id in out  # kept, and it says which run holds it
    out = undo(ip, capsys, second.id)
    assert items == ["a"] and ip.user_ns["items"] is items, out
    if order == (0, 1):
        assert runs[0].id in out  # the line says it took the waiting run's change back too
    for run in runs:  # nothing of either run waits any more
        with pytest.raises(UsageError, match="already undone"):
            ip.run_line_magic("deepagent_undo", run.id)


# ------------------------------------------------------------------ three runs, every order of every subset
THREE = [
    ("One.", "rows.append(1)\nmade = [1]\nconf['k'] = 1"),
    ("Two.", "rows.append(2)\nmade.append(2)\nconf['k'] = 2\nextra = {'n': 2}"),
    ("Three.", "rows.append(3)\nmade.append(3)\nextra['n'] = 3\nconf['j'] = 3"),
]
NAMES = ("rows", "made", "conf", "extra")


def three_runs(ip):
    ip.user_ns.update(rows=[0], conf={"k": 0})
    return [agent(ip, step) for step in THREE]


def undone_in(ip, capsys, order):
    runs = three_runs(ip)
    rows, conf = ip.user_ns["rows"], ip.user_ns["conf"]
    for index in order:
        undo(ip, capsys, runs[index].id)
    assert ip.user_ns["rows"] is rows and ip.user_ns["conf"] is conf  # restored into the user's own objects
    return state(ip, *NAMES)


SUBSET_ORDERS = [order for size in (2, 3) for order in itertools.permutations(range(3), size)
                 if list(order) != sorted(order, reverse=True)]


@pytest.mark.parametrize("order", SUBSET_ORDERS, ids=lambda order: "-".join(f"r{i + 1}" for i in order))
def test_every_order_of_undos_ends_where_newest_first_does(ip, capsys, order):
    got = undone_in(ip, capsys, order)
    ip.reset(new_session=False)
    expected = undone_in(ip, capsys, sorted(order, reverse=True))
    assert got == expected


def test_all_three_undone_newest_first_give_back_what_the_user_had(ip, capsys):
    assert undone_in(ip, capsys, (2, 1, 0)) == {"rows": [0], "made": "<unbound>", "conf": {"k": 0},
                                                "extra": "<unbound>"}


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))),
                         ids=lambda order: "-".join(f"r{i + 1}" for i in order))
def test_all_three_undone_in_any_order_give_back_what_the_user_had(ip, capsys, order):
    assert undone_in(ip, capsys, order) == {"rows": [0], "made": "<unbound>", "conf": {"k": 0},
                                            "extra": "<unbound>"}


# ------------------------------------------------------------------ names a run rebound, deleted, created
@pytest.mark.parametrize("older_first", [True, False])
def test_a_name_rebound_or_deleted_by_a_run_then_changed_by_a_later_one(ip, capsys, older_first):
    ip.user_ns.update(cfg={"k": 1}, rows=[1])
    cfg, rows = ip.user_ns["cfg"], ip.user_ns["rows"]
    first = agent(ip, ("Rebind and delete.", "cfg = {'k': 'agent'}\ndel rows"))
    second = agent(ip, ("Change.", "cfg['k'] = 2\nrows.append(2)"))
    for run in ([first, second] if older_first else [second, first]):
        undo(ip, capsys, run.id)
    assert ip.user_ns["cfg"] is cfg and cfg == {"k": 1} and ip.user_ns["rows"] is rows and rows == [1]


@pytest.mark.parametrize("older_first", [True, False])
def test_a_name_a_run_created_and_a_later_run_changed_is_gone_in_either_order(ip, capsys, older_first):
    cell(ip, "class Box:\n    pass")
    first = agent(ip, ("Make.", "made = [1]\ntable = {'a': 1}\nbox = Box()\nbox.size = 1"))
    second = agent(ip, ("Change.", "made.append(2)\ntable['b'] = 2\nbox.size = 2\nbox.colour = 'red'"))
    third = agent(ip, ("Change again.", "made.append(3)\ndel table['a']"))
    order = [first, second, third] if older_first else [third, second, first]
    for run in order:
        undo(ip, capsys, run.id)
    assert state(ip, "made", "table", "box") == dict.fromkeys(("made", "table", "box"), "<unbound>")


@pytest.mark.parametrize("older_first", [True, False])
def test_a_name_the_user_deleted_and_a_later_run_created_again(ip, capsys, older_first):
    first = agent(ip, ("Make.", "made = [1]"))
    cell(ip, "del made")
    second = agent(ip, ("Make again.", "made = [2]"))
    for run in ([first, second] if older_first else [second, first]):
        undo(ip, capsys, run.id)
    assert "made" not in ip.user_ns


# ------------------------------------------------------------------ the user's own hand between runs
@pytest.mark.parametrize("older_first", [True, False])
def test_a_users_edit_between_the_runs_is_never_clobbered_and_is_named(ip, capsys, older_first):
    ip.user_ns["items"] = items = ["a"]
    first = agent(ip, ("B.", "items.append('b')\nmade = [1]"))
    cell(ip, "items.append('mine')\nmade.append('mine')")
    second = agent(ip, ("C.", "items.append('c')\nmade.append(2)"))
    outs = [undo(ip, capsys, run.id) for run in ([first, second] if older_first else [second, first])]
    assert items == ["a", "b", "mine"] and ip.user_ns["made"] == [1, "mine"]
    last = outs[-1]  # the undo that settled the older run's change says it kept it, and why
    if older_first:
        assert first.id in last
    assert "items" in last and "made" in last and "by you" in last


@pytest.mark.parametrize("older_first", [True, False])
def test_a_users_edit_after_both_runs_is_never_clobbered(ip, capsys, older_first):
    ip.user_ns["items"] = items = ["a"]
    first = agent(ip, ("B.", "items.append('b')"))
    second = agent(ip, ("C.", "items.append('c')"))
    cell(ip, "items.append('mine')")
    outs = [undo(ip, capsys, run.id) for run in ([first, second] if older_first else [second, first])]
    assert items == ["a", "b", "c", "mine"]
    assert "by you" in outs[-1] and "undo it first" not in outs[-1]  # no run left to undo holds it: it is yours


@pytest.mark.parametrize("older_first", [True, False])
def test_a_name_the_user_set_again_between_the_runs_stays_theirs(ip, capsys, older_first):
    first = agent(ip, ("Make.", "made = [1]"))
    cell(ip, "made = made")  # the very same object, set by the user's own cell: theirs now
    second = agent(ip, ("Change.", "made.append(2)"))
    for run in ([first, second] if older_first else [second, first]):
        undo(ip, capsys, run.id)
    assert ip.user_ns["made"] == [1]  # the later run's change taken back; the name the user set is kept


def test_a_users_edit_between_the_two_undos_is_kept(ip, capsys):
    ip.user_ns["items"] = items = ["a"]
    first = agent(ip, ("B.", "items.append('b')"))
    second = agent(ip, ("C.", "items.append('c')"))
    undo(ip, capsys, first.id)
    cell(ip, "items.append('mine')")
    out = undo(ip, capsys, second.id)
    assert items == ["a", "b", "c", "mine"] and "by you" in out


def test_a_later_run_whose_change_cannot_be_restored_leaves_the_older_one_kept_and_named(ip, capsys):
    ip.user_ns["items"] = items = ["a"]
    first = agent(ip, ("B.", "items.append('b')"))
    ip.run_line_magic("deepagent_config", "--undo-limit 0")
    second = agent(ip, ("C.", "items.append('c')"))
    undo(ip, capsys, first.id)
    out = undo(ip, capsys, second.id)
    assert items == ["a", "b", "c"] and "NOT restored" in out
    assert first.id in out and second.id in out  # the older run's change stays, and says what holds it
    with pytest.raises(UsageError, match="already undone"):
        ip.run_line_magic("deepagent_undo", first.id)
