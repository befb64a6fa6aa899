"""A run exported as a notebook validates, and re-running it (nbclient, a real kernel) re-creates the
variables the recorded steps created, with sub-agents as sections and their results replayed."""

from __future__ import annotations

import json

import nbclient
import nbformat
import pytest

from deepagent_magics import DeepAgent, session
from deepagent_magics.tools import _tool
from deepagent_magics.export import write_notebook
from deepagent_magics.records import load_record, runs_dir
from deepagent_magics.testing import ScriptedLM

pytestmark = pytest.mark.kernel

PARENT = [
    ("Plan.", "write_todos([{'content': 'count', 'status': 'in_progress'}])\nwords = 'a b c d'.split()"),
    ("Try something that fails.", "1 / 0"),
    ("Delegate the counting.", "counted = ask_helper('count the words in: a b c d')\nprint(counted)"),
    ("Write and finish.", "report = f'{len(words)} words, sub-agent said {counted}'\n"
                          "write_file('report.md', report)\nSUBMIT(result=report)"),
]
CHILD = [("Count.", "n_words = len('a b c d'.split())"), ("Return.", "SUBMIT(result=str(n_words))")]


@_tool
def ask_helper(task: str) -> str:
    """Hand a task to a sub-agent and return its result (a stand-in for the kernel sub-agents)."""
    parent = session.current()
    child = parent.run.add_child(task)
    agent = parent.agent
    DeepAgent(lm=agent.lm, workspace=parent.workspace.root, depth=1, timeout=None).run(task, {}, run=child)
    parent.run.child_finished(child)
    return child.result


def test_the_exported_notebook_validates_and_re_runs(workspace, tmp_path):
    lm = ScriptedLM(scripts={"": PARENT, "count the words": CHILD})
    run = DeepAgent(lm=lm, workspace=workspace, tools=[ask_helper], timeout=None).run("Count words", {})
    assert run.status == "finished" and run.steps[2].children[0].result == "4"
    record = load_record(runs_dir(workspace) / f"{run.id}.json")
    (workspace / "report.md").unlink()

    path = write_notebook(record, tmp_path / "run.ipynb")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    markdown = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
    assert any(text.startswith("### Sub-agent `" + run.steps[2].children[0].id) and "(from step 3)" in text
               for text in markdown)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.source for cell in code[1:]] == [c for _, c in PARENT[:3]] + [c for _, c in CHILD] + [PARENT[3][1]]
    assert code[2].metadata["tags"] == ["raises-exception"] and "ZeroDivisionError" in code[2].outputs[0]["text"]

    nb.cells.append(nbformat.v4.new_code_cell(
        "import json\nprint(json.dumps({'words': words, 'counted': counted, 'report': report, "
        "'n_words': n_words, 'submitted': _submitted}))"))
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    values = json.loads(nb.cells[-1].outputs[0]["text"])
    assert values == {"words": ["a", "b", "c", "d"], "counted": "4", "report": "4 words, sub-agent said 4",
                      "n_words": 4, "submitted": {"result": "4 words, sub-agent said 4"}}
    assert (workspace / "report.md").read_text() == "4 words, sub-agent said 4"  # the file tools acted again
