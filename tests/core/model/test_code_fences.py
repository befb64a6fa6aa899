"""Code is stored as it ran: the Markdown fences a model puts around its code never reach the REPL, the record,
the event stream (what the dashboard draws), ``%deepagent_why`` or an exported notebook, which re-runs."""

from __future__ import annotations

import json

import nbclient
import nbformat
import pytest

from deepagent_magics.core.model.code_fences import runnable
from deepagent_magics.records import load_record, runs_dir
from deepagent_magics.records.events import SUFFIX, read_events
from deepagent_magics.records.export import write_notebook
from deepagent_magics.testing import ScriptedLM

REPORT = 'report = """\n## Result\n```python\nprint(1)\n```\n"""'


@pytest.mark.parametrize("written, code", [
    ("```python\nx = 1\nprint(x)\n```", "x = 1\nprint(x)"),
    ("```\n```python\nx = 1\n```\n```", "x = 1"),  # fenced twice
    ("~~~python\nx = 1\n~~~", "x = 1"),
    ("~~~~\nx = 1\n~~~~", "x = 1"),
    ("Here is the code:\n```python\nx = 1\n```\nIt prints nothing.", "x = 1"),  # prose around the fence
    ("```py\na = 1\n```\nthen\n```python\nb = a + 1\n```", "a = 1\n\nb = a + 1"),  # RLM would run only the first
    ("  ```python\n  if x:\n      y()\n  ```", "if x:\n    y()"),
    ("```python\nx = 1", "x = 1"),  # cut off before its closing fence
    (REPORT, REPORT),  # code that builds Markdown with a fence in a string is code as it stands
    ("```python\n" + REPORT + "\n```", REPORT),
    ("print('```')", "print('```')"),
    ("x = 1\n", "x = 1"),
])
def test_the_code_inside_the_fences_is_what_runs(written, code):
    assert runnable(written) == code
    assert runnable(code) == code  # idempotent: stripping twice changes nothing


def test_a_block_of_another_language_is_left_as_written():
    assert runnable("```bash\nls -la\n```") == "```bash\nls -la\n```"


STEPS = [
    ("Rows.", "```python\nrows = 3\n```"),
    ("Columns.", "~~~python\ncols = 4\n~~~"),
    ("Cells.", "The product:\n```python\ncells = rows * cols\n```\nThat is all."),
    ("Show.", "```\n```python\nprint(cells)\n```\n```"),
    ("Report.", "```python\n" + REPORT + "\nprint(len(report))\n```"),
    ("Done.", "```python\nSUBMIT(result=str(cells))\n```"),
]
PLAIN = ["rows = 3", "cols = 4", "cells = rows * cols", "print(cells)", REPORT + "\nprint(len(report))",
         "SUBMIT(result=str(cells))"]


@pytest.mark.kernel
def test_fenced_steps_run_and_are_stored_shown_and_exported_as_they_ran(ip, tmp_path, capsys):
    ip.user_ns["lm"] = ScriptedLM(STEPS)
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nCount the cells").raise_error()
    run = ip.user_ns["_deepagent_run"]
    assert run.status == "finished" and run.result == "12" and ip.user_ns["cells"] == 12
    assert [step.code for step in run.steps] == PLAIN
    assert run.steps[3].output == "12" and run.steps[4].output == "34"
    workspace = run.config["workspace"]
    log = read_events(runs_dir(workspace) / f"{run.id}{SUFFIX}")
    started = [event["data"]["code"] for event in log.events if event["kind"] == "step_started"]
    assert started == PLAIN  # what the dashboard, the text view and a live client draw
    record = load_record(runs_dir(workspace) / f"{run.id}.json")
    assert [step["code"] for step in record["steps"]] == PLAIN

    capsys.readouterr()
    ip.run_line_magic("deepagent_why", "cells")
    why = capsys.readouterr().out
    assert "    cells = rows * cols" in why and "```" not in why and "~~~" not in why

    path = write_notebook(record, tmp_path / "run.ipynb")
    nb = nbformat.read(path, as_version=4)
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"][1:]
    assert code == PLAIN
    nb.cells.append(nbformat.v4.new_code_cell("import json\nprint(json.dumps({'cells': cells, 'report': report}))"))
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()  # a SyntaxError would raise
    assert json.loads(nb.cells[-1].outputs[0]["text"]) == {"cells": 12, "report": REPORT.split('"""')[1]}


def test_an_old_record_with_fenced_code_exports_without_the_fences(tmp_path):
    record = {"id": "old", "task": "t", "status": "finished", "result": "ok", "config": {}, "todos": [],
              "steps": [{"index": 1, "reasoning": "r", "code": "```python\nx = 1\n```", "output": ""}]}
    nb = nbformat.read(write_notebook(record, tmp_path / "old.ipynb"), as_version=4)
    assert [cell.source for cell in nb.cells if cell.cell_type == "code"][1:] == ["x = 1"]
