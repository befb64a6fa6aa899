"""A run exported as a notebook validates, and re-running it (nbclient, a real kernel) re-creates the
variables the recorded steps created, with sub-agents (real ones, in kernels) as sections and their results replayed."""

from __future__ import annotations

import json

import nbclient
import nbformat
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.records.export import write_notebook
from deepagent_magics.records import load_record, runs_dir
from deepagent_magics.testing import ScriptedLM

pytestmark = pytest.mark.kernel

PARENT = [
    ("Plan.", "write_todos([{'content': 'count', 'status': 'in_progress'}])\nwords = 'a b c d'.split()"),
    ("Try something that fails.", "1 / 0"),
    ("Delegate the counting.", "counted = delegate('count the words in: a b c d')\nprint(counted)"),
    ("Write and finish.", "report = f'{len(words)} words, sub-agent said {counted}'\n"
                          "write_file('report.md', report)\nSUBMIT(result=report)"),
]
CHILD = [("Count.", "n_words = len(open('words.txt').read().split())"), ("Return.", "SUBMIT(result=str(n_words))")]


@pytest.fixture
def pool():
    pool = KernelPool(size=1)
    try:
        yield pool
    finally:
        pool.stop()


def test_the_exported_notebook_validates_and_re_runs(workspace, tmp_path, pool):
    (workspace / "words.txt").write_text("a b c d")  # sub-agents run in the workspace directory
    lm = ScriptedLM(scripts={"": PARENT, "count the words": CHILD})
    run = DeepAgent(lm=lm, workspace=workspace, pool=pool).run("Count words", {})
    assert run.status == "finished" and run.steps[2].children[0].result == "4"
    record = load_record(runs_dir(workspace) / f"{run.id}.json")
    (workspace / "report.md").unlink()

    path = write_notebook(record, tmp_path / "run.ipynb")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    markdown = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
    assert any("<h3>Sub-agent <code>" + run.steps[2].children[0].id in text and "(from step 3)" in text
               for text in markdown)
    code = [cell for cell in nb.cells if cell.cell_type == "code" and "deepagent-cwd" not in cell.metadata.get("tags", [])]
    assert [cell.source for cell in code[1:]] == [c for _, c in PARENT[:3]] + [c for _, c in CHILD] + [PARENT[3][1]]
    assert code[2].metadata["tags"] == ["raises-exception"] and "ZeroDivisionError" in code[2].outputs[0]["text"]

    nb.cells.append(nbformat.v4.new_code_cell(
        "import json, os\nprint(json.dumps({'words': words, 'counted': counted, 'report': report, "
        "'n_words': n_words, 'submitted': _submitted, 'cwd': os.getcwd()}))"))
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    values = json.loads(nb.cells[-1].outputs[0]["text"])
    assert values == {"words": ["a", "b", "c", "d"], "counted": "4", "report": "4 words, sub-agent said 4",
                      "n_words": 4, "submitted": {"result": "4 words, sub-agent said 4"}, "cwd": str(tmp_path)}
    assert (workspace / "report.md").read_text() == "4 words, sub-agent said 4"  # the file tools acted again
