"""magics/changes.py: what agent runs changed in the notebook, the cell's summary of it, ``%deepagent_why``
and ``%deepagent_undo``, through a real InteractiveShell."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.core.run.run import Run
from deepagent_magics.magics.changes import agent_names, run_tree_approvals, summarize, summarize_changes
from deepagent_magics.testing import ScriptedLM

STEPS = [
    ("Make a total and grow the list.", "total = sum(xs)\nxs.append(4)\nprint(total)"),
    ("Done.", "SUBMIT(result=str(total))"),
]


def run_cell(ip, steps=STEPS):
    ip.user_ns["lm"] = ScriptedLM(steps)
    result = ip.run_cell("%%deepagent --lm lm\nTotal xs.")
    assert result.error_in_exec is None
    return ip.user_ns["_deepagent_run"]


def test_the_summary_names_what_the_run_created_and_changed_in_place(ip, capsys):
    ip.user_ns["xs"] = [1, 2, 3]
    capsys.readouterr()
    run = run_cell(ip)
    line = summarize_changes(run)
    assert line == ("deepagent: this run created total; changed in place xs (%deepagent_why NAME says how; "
                    "%deepagent_undo takes the run back)")
    assert line in capsys.readouterr().out  # the cell printed it (summarize, after the run)


def test_a_run_that_changed_nothing_says_nothing(capsys):
    run = Run("task")
    assert summarize_changes(run) is None
    run.finish("finished", result="ok")
    summarize(run)
    assert capsys.readouterr().out == ""


def test_a_stopped_run_and_refused_blocks_are_said(capsys):
    run = Run("task")
    run.approvals = [{"decision": "refused", "time": 2.0}, {"decision": "approved", "time": 1.0}]
    run.finish("stopped", error="stopped by you after step 1")
    summarize(run)
    out = capsys.readouterr().out
    assert "the run was stopped by you after step 1; its steps and variables are kept" in out
    assert "1 block(s) needed your approval and were not run" in out
    assert [entry["time"] for entry in run_tree_approvals(run)] == [1.0, 2.0]


def test_the_names_runs_made_are_those_still_holding_what_the_run_left(ip):
    ip.user_ns["xs"] = [1, 2, 3]
    run = run_cell(ip)
    assert agent_names([run], ip.user_ns) == ["total"]
    ip.user_ns["total"] = 99  # the user's own value now
    assert agent_names([run], ip.user_ns) == []


def test_why_says_which_run_and_step_made_a_name_with_its_code(ip, capsys):
    ip.user_ns["xs"] = [1, 2, 3]
    run = run_cell(ip)
    capsys.readouterr()
    ip.run_line_magic("deepagent_why", "total")
    out = capsys.readouterr().out
    assert out.startswith(f"total was created by run {run.id} ('Total xs.'), step 1.")
    assert "    total = sum(xs)" in out
    with pytest.raises(UsageError, match="no agent run in this kernel session made or changed 'nothing'"):
        ip.run_line_magic("deepagent_why", "nothing")
    with pytest.raises(UsageError, match="give the name of a notebook variable"):
        ip.run_line_magic("deepagent_why", "1x")


def test_undo_takes_the_last_run_back_and_only_once(ip, capsys):
    ip.user_ns["xs"] = [1, 2, 3]
    run = run_cell(ip)
    capsys.readouterr()
    ip.run_line_magic("deepagent_undo", "")
    assert capsys.readouterr().out.startswith(f"deepagent: undid run {run.id}: ")
    assert "total" not in ip.user_ns and ip.user_ns["xs"] == [1, 2, 3]
    with pytest.raises(UsageError):
        ip.run_line_magic("deepagent_undo", run.id)
    with pytest.raises(UsageError, match="no run 'zzz' in this kernel session"):
        ip.run_line_magic("deepagent_undo", "zzz")
