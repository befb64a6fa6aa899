"""The notebooks in notebooks/ run top to bottom in a real kernel, as CI executes them.

Each runs from a temporary copy (its working directory is a temporary folder), so what
it writes (workspaces, exported notebooks, saved programs) never lands in the repository,
and `make test` twice in a row sees the same notebooks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from deepagent_magics.demos.quickstart import run_notebook

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
pytestmark = pytest.mark.kernel


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 4


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_the_notebook_runs_from_a_temporary_copy_without_errors(notebook, tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPAGENT_LM", raising=False)  # the notebooks play their scripted models
    copy = tmp_path / notebook.name
    shutil.copyfile(notebook, copy)
    original = notebook.read_bytes()
    executed = run_notebook(copy, keep=True)
    errors = [output for cell in executed.cells for output in cell.get("outputs", [])
              if output.get("output_type") == "error"]
    assert not errors, "\n".join(f"{e['ename']}: {e['evalue']}" for e in errors)
    assert all(cell.get("execution_count") for cell in executed.cells if cell.cell_type == "code")
    assert notebook.read_bytes() == original
    assert not (notebook.parent / "workspace").exists(), "the notebook wrote into the repository"


def test_the_quickstart_says_what_the_agent_found(tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPAGENT_LM", raising=False)
    copy = tmp_path / "01_quickstart.ipynb"
    shutil.copyfile(NOTEBOOKS[0], copy)
    text = run_notebook(copy)
    assert "3 of 5 regions fell in Q3" in text and "report.md" in text
    assert (tmp_path / "workspace" / "report.md").is_file()


def test_the_demo_with_a_real_model_shows_the_run_working_as_it_goes(tmp_path, monkeypatch):
    """``DEEPAGENT_LM=local make demo``: a step takes tens of seconds, so the terminal sees each cell's output
    as it is printed, with the text display's line per step, not one silent wait for the whole notebook."""
    monkeypatch.delenv("DEEPAGENT_LM", raising=False)  # the scripted agent stands in for the slow model
    copy = tmp_path / "01_quickstart.ipynb"
    shutil.copyfile(NOTEBOOKS[0], copy)

    class Terminal:
        def __init__(self):
            self.writes: list[str] = []

        def write(self, text):
            self.writes.append(text)

        def flush(self):
            pass

    terminal = Terminal()
    text = run_notebook(copy, echo=terminal)
    shown = "".join(terminal.writes)
    assert "3 of 5 regions fell in Q3" in text
    steps = [i for i, write in enumerate(terminal.writes) if "] step " in write and "/12" in write]
    assert len(steps) >= 4  # the text display's line per step, each written as the step finished
    assert "finished: 4 steps" in shown and shown.index("step 1/12") < shown.index("finished: 4 steps")


def test_a_headless_notebook_keeps_the_runs_final_summary_as_the_dashboards_text(tmp_path):
    """Read without widgets (GitHub, nbconvert, CI logs), the dashboard's output says how the run ended."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext deepagent_magics\nfrom deepagent_magics.testing import ScriptedLM\n"
                                  "lm = ScriptedLM([('Count.', 'n = 3\\nprint(n)'), ('Done.', 'SUBMIT(result=str(n))')])\n"
                                  "%deepagent_config --workspace ws --display widgets"),
        nbformat.v4.new_code_cell("%%deepagent --lm lm\nCount to three."),
    ]
    path = tmp_path / "headless.ipynb"
    nbformat.write(nb, str(path))
    executed = run_notebook(path, keep=True)
    views = [output for output in executed.cells[1].outputs
             if "application/vnd.jupyter.widget-view+json" in output.get("data", {})]
    assert len(views) == 1
    text = views[0]["data"]["text/plain"]
    assert "finished" in text and "2 steps" in text and "pending" not in text


def test_a_notebook_saved_without_widget_state_still_shows_the_result(tmp_path):
    """Executed headless and stripped of widget state (Jupyter's default save; what GitHub and nbviewer show),
    the cell still shows the answer: the result is an ordinary output (sanitised HTML) with a plain-text fallback,
    below the dashboard, and what HTML a model wrote in it could run is taken out."""
    import nbformat

    answer = "**3 regions fell**\n\n| region | change |\n|---|---:|\n| East | -24,100 |\n\n<img src=x onerror=alert(1)>"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext deepagent_magics\nfrom deepagent_magics.testing import ScriptedLM\n"
                                  f"answer = {answer!r}  # what the model will submit\n"
                                  "lm = ScriptedLM([('Done.', 'SUBMIT(result=answer)')])\n"
                                  "%deepagent_config --workspace ws --display widgets --pool-size 0"),
        nbformat.v4.new_code_cell("%%deepagent --lm lm --out summary\nWhich regions fell?"),
    ]
    path = tmp_path / "headless.ipynb"
    nbformat.write(nb, str(path))
    executed = run_notebook(path, keep=True)
    executed.metadata.pop("widgets", None)  # saved without widget state
    for cell in executed.cells:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop("application/vnd.jupyter.widget-view+json", None)
    saved = nbformat.reads(nbformat.writes(executed), as_version=4)

    outputs = [output for output in saved.cells[1].outputs if output.get("output_type") in ("display_data", "execute_result")]
    results = [output for output in outputs if "deepagent-result" in output.get("data", {}).get("text/html", "")]
    assert len(results) == 1, outputs
    shown = results[0]["data"]
    assert "text/markdown" not in shown  # JupyterLab renders Markdown output as trusted HTML
    assert "<strong>3 regions fell</strong>" in shown["text/html"] and "<td>East</td>" in shown["text/html"]
    assert "onerror" not in shown["text/html"] and "alert" not in shown["text/html"]
    assert "| East | -24,100 |" in shown["text/plain"]
    assert outputs.index(results[0]) > 0  # below the dashboard
