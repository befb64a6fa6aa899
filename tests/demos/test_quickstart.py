"""demos/quickstart.py: the scripted quickstart plays a real agent's run over the notebook's sales, and a notebook runs
headless (every notebook as CI runs them: tests/end_to_end/test_notebooks.py)."""

from __future__ import annotations

import nbformat
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.demos.quickstart import NOTICE, quickstart_lm, run_notebook

SALES = [{"region": "North", "q2": 100, "q3": 80}, {"region": "South", "q2": 50, "q3": 70},
         {"region": "East", "q2": 90, "q3": 40}]


def test_the_script_ranks_the_regions_that_fell_and_writes_the_report(tmp_path, capsys):
    lm = quickstart_lm()
    assert capsys.readouterr().out.strip() == NOTICE
    namespace = {"sales": SALES}
    run = DeepAgent(lm=lm, workspace=tmp_path).run("Rank the regions whose sales fell", namespace=namespace)
    assert run.status == "finished" and run.result.startswith("**2 of 3 regions fell in Q3.** The largest drop was East")
    assert namespace["ranking"] == ["East", "North"] and (tmp_path / "report.md").read_text().startswith("# Q3 sales report")
    assert all(item["status"] == "completed" for item in run.todos)
    quickstart_lm(announce=False)
    assert capsys.readouterr().out == ""


@pytest.mark.kernel
def test_a_notebook_runs_headless_and_its_tagged_cells_text_comes_back(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 6 * 7"),
                                               nbformat.v4.new_code_cell("print(x)", metadata={"tags": ["demo-result"]})])
    path = tmp_path / "n.ipynb"
    nbformat.write(notebook, path)
    assert run_notebook(path, timeout=120) == "42"
    assert run_notebook(path, timeout=120, keep=True).cells[1].outputs[0]["text"] == "42\n"
