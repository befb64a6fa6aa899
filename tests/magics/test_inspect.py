"""magics/inspect.py: %deepagent_runs, %deepagent_trace and %deepagent_export read the run records."""

from __future__ import annotations

import ipywidgets
import nbformat
import pytest
from IPython.core.error import UsageError
from ipywidgets.widgets.widget import _instances

from deepagent_magics.display.dashboard import DASHBOARD_CLASS
from deepagent_magics.testing import ScriptedLM

FIRST = [("Count.", "n = 3\nprint(n)"), ("Done.", "SUBMIT(result='three')")]
SECOND = [
    ("Plan.", "write_todos([{'content': 'double', 'status': 'in_progress'}])"),
    ("Double.", "m = 2 * 21\nwrite_file('double.txt', str(m))\nprint(m)"),
    ("Done.", "SUBMIT(result=f'm={m}')"),
]


@pytest.fixture
def two_runs(ip):
    ip.user_ns["lm"] = ScriptedLM(FIRST)
    ip.run_cell("%%deepagent --lm lm\nCount to three")
    ip.user_ns["lm"] = ScriptedLM(SECOND)
    ip.run_cell("%%deepagent --lm lm\nDouble twenty-one\nand write it down")
    return ip.user_ns["_deepagent_run"]  # the second


def test_runs_lists_recent_runs_newest_first(ip, two_runs, capsys):
    capsys.readouterr()
    ip.run_line_magic("deepagent_runs", "")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "time", "status", "steps", "tokens", "(tree)", "cost", "(tree)", "task"]
    assert "Double twenty-one" in lines[1] and "finished" in lines[1] and " 3 " in lines[1]
    assert "cost unknown" in lines[1] and "$0.0000" not in lines[1]  # a scripted model has no price
    assert "Count to three" in lines[2] and " 2 " in lines[2]
    assert two_runs.id in lines[1]
    ip.run_line_magic("deepagent_runs", "--limit 1")
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_trace_prints_one_step_of_the_last_run(ip, two_runs, capsys):
    capsys.readouterr()
    ip.run_line_magic("deepagent_trace", "--step 2")
    out = capsys.readouterr().out
    assert "Step 2/3 of run " + two_runs.id in out
    assert "m = 2 * 21" in out and "\n42" in out and "Double." in out


def test_trace_reopens_a_past_run_by_a_short_id(ip, two_runs, capsys):
    first = ip.magics_manager.registry["DeepAgentMagics"].runs[-2]
    capsys.readouterr()
    ip.run_line_magic("deepagent_trace", first.id[-6:])  # as text: this is a terminal shell
    out = capsys.readouterr().out
    assert "step 1/20 ✓ Count." in out and "finished: 2 steps" in out and "three" in out


def test_trace_rebuilds_the_dashboard_from_the_record(ip, two_runs):
    ip.run_line_magic("deepagent_trace", "--display widgets")
    board = [w for w in list(_instances.values()) if DASHBOARD_CLASS in getattr(w, "_dom_classes", ())][-1]
    status, panels, trajectory, result_box = board.children
    pages = trajectory.children[1].children[1]
    titles = [entry.titles[0] for page in pages.children for entry in page.children]
    assert titles == ["✓ Step 1 · Plan.", "✓ Step 2 · Double.", "✓ Step 3 · Done."]
    assert "double" in panels.children[0].children[1].value  # the todos
    assert "double.txt" in panels.children[1].children[1].value  # the tree
    assert "finished" in status.value and "iteration 3/20" in status.value
    assert "<p>m=42</p>" in result_box.children[1].outputs[0]["data"]["text/html"]
    assert isinstance(result_box, ipywidgets.VBox)


def test_export_writes_a_valid_notebook(ip, two_runs, tmp_path):
    target = tmp_path / "exports" / "run.ipynb"
    ip.run_line_magic("deepagent_export", str(target))
    nb = nbformat.read(target, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["deepagent"]["run_id"] == two_runs.id
    assert "Double twenty-one" in nb.cells[0].source
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code[0].metadata["tags"] == ["deepagent-setup"]
    assert [cell.source for cell in code[1:]] == [step for _, step in SECOND]
    assert code[2].outputs[0]["text"].strip() == "42"


def test_bad_input_is_a_one_line_usage_error(ip, two_runs, tmp_path):
    cases = [
        ("deepagent_trace", "no-such-run"),
        ("deepagent_trace", "--step 9"),
        ("deepagent_export", ""),
        ("deepagent_export", "no-such-run out.ipynb"),
        ("deepagent_export", str(tmp_path / "out.txt")),
        ("deepagent_runs", "--limit 0"),
    ]
    for magic, line in cases:
        with pytest.raises(UsageError) as caught:
            ip.run_line_magic(magic, line)
        assert "\n" not in str(caught.value), (magic, line)


def test_with_no_runs_trace_says_how_to_make_one(ip, monkeypatch):
    monkeypatch.setattr(ip.magics_manager.registry["DeepAgentMagics"], "runs", [])  # earlier tests' runs
    with pytest.raises(UsageError, match="no recorded runs"):
        ip.run_line_magic("deepagent_trace", "")
