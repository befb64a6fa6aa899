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


# ---------------------------------------------------------------- an export re-runs on its own (issue 28, item 1)
STRICT = "import warnings\nwarnings.simplefilter('error', DeprecationWarning)  # an export imports no deprecated name"


@pytest.fixture
def notebook_session(ip, tmp_path, monkeypatch):
    """A notebook whose folder is its workspace (the kernel's working directory), with no runs or threads yet."""
    from deepagent_magics.core.run import conversations as threads

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ip.magics_manager.registry["DeepAgentMagics"], "runs", [])
    monkeypatch.setattr(threads, "_threads", {})
    monkeypatch.setattr(threads, "_thread_of_run", {})
    yield ip
    ip.magics_manager.registry["DeepAgentMagics"].__dict__.pop("resumed", None)


def _restart(ip, monkeypatch, names):
    from deepagent_magics.core.run import conversations as threads

    monkeypatch.setattr(ip.magics_manager.registry["DeepAgentMagics"], "runs", [])
    monkeypatch.setattr(threads, "_threads", {})
    monkeypatch.setattr(threads, "_thread_of_run", {})
    for name in names:
        ip.user_ns.pop(name, None)


def _execute(path, folder):
    """Run the exported notebook top to bottom in a fresh kernel whose folder is ``folder``, strictly."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(STRICT))
    nb.cells.append(nbformat.v4.new_code_cell("import json as _j\nprint(_j.dumps(_submitted, default=str))"))
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]
    assert not [out for out in outputs if "DeprecationWarning" in json.dumps(out)]
    return nb, json.loads(nb.cells[-1].outputs[0]["text"])


def test_a_follow_up_after_a_resume_exports_a_notebook_that_resumes_the_same_checkpoint(notebook_session, tmp_path,
                                                                                        monkeypatch):
    ip = notebook_session
    ip.user_ns.update(sales=[3, 4, 5], lm=ScriptedLM([("Fit.", "total = sum(sales)\nscale = 2"),
                                                       ("Done.", "SUBMIT(result=str(total))")]))
    ip.run_cell("%%deepagent --lm lm --max-depth 0 --out t1\nsum the sales").raise_error()
    ip.run_line_magic("deepagent_checkpoint", "t1")
    _restart(ip, monkeypatch, ["total", "scale", "t1", "sales", "_deepagent_run"])  # a new kernel ...
    ip.run_line_magic("deepagent_resume", "t1")  # ... resumed, as in the real session
    follow = ("Plot.", "with open('plot.txt', 'w') as fh:\n    fh.write(str(total * scale))\nprint(ls())\n"
                       "SUBMIT(result=str(total * scale))")
    ip.user_ns["lm"] = ScriptedLM([follow])
    ip.run_cell("%%deepagent --lm lm --max-depth 0 --continue\ndouble it").raise_error()
    (tmp_path / "plot.txt").unlink()  # the run's own file: the re-run must show the one it writes itself
    rerun = tmp_path / "elsewhere"
    rerun.mkdir()
    ip.run_line_magic("deepagent_export", f"{rerun / 'follow.ipynb'}")

    nb, submitted = _execute(rerun / "follow.ipynb", rerun)
    setup = next(cell for cell in nb.cells if "deepagent-setup" in cell.metadata.get("tags", []))
    assert "%deepagent_resume t1 --workspace" in setup.source and "from deepagent_magics import Workspace" in setup.source
    assert submitted == {"result": "24"}
    printed = "".join(out.get("text", "") for cell in nb.cells for out in cell.get("outputs", []))
    assert "plot.txt" in printed and (rerun / "plot.txt").read_text() == "24"  # ls() sees where the code wrote
    assert not (tmp_path / "plot.txt").exists()


def test_a_follow_up_in_the_same_kernel_carries_its_earlier_turns_code(notebook_session, tmp_path):
    ip = notebook_session
    ip.user_ns["lm"] = ScriptedLM([("Base.", "base = 40"), ("Done.", "SUBMIT(result=str(base))")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nmake the base").raise_error()
    ip.user_ns["lm"] = ScriptedLM([("Add.", "answer = base + 2\nSUBMIT(result=str(answer))")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0 --continue\nadd two").raise_error()
    rerun = tmp_path / "elsewhere"
    rerun.mkdir()
    ip.run_line_magic("deepagent_export", f"{rerun / 'follow.ipynb'}")
    nb, submitted = _execute(rerun / "follow.ipynb", rerun)
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    assert code.index("base = 40") < code.index("answer = base + 2\nSUBMIT(result=str(answer))")
    assert "Earlier turn 1" in "".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    assert submitted == {"result": "42"}


def test_an_export_that_needs_the_users_data_stops_in_its_first_cell_with_one_line_naming_it(notebook_session,
                                                                                             tmp_path):
    ip = notebook_session
    ip.run_cell("import statistics as st\nfrom json import dumps\nreadings = [1.0, 2.0, 6.0]", store_history=True)
    ip.user_ns["lm"] = ScriptedLM([("Mean.", "m = st.mean(readings)\nprint(dumps({'m': m}))"),
                                   ("Done.", "SUBMIT(result=str(m))")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\naverage the readings").raise_error()
    run_id = ip.user_ns["_deepagent_run"].id
    ip.run_line_magic("deepagent_export", f"{tmp_path / 'mean.ipynb'}")
    nb = nbformat.read(tmp_path / "mean.ipynb", as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(STRICT))
    with pytest.raises(nbclient.exceptions.CellExecutionError) as failed:
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    ran = [cell for cell in nb.cells if cell.cell_type == "code" and "execution" in cell.metadata]  # nbclient's marks
    assert len(ran) == 2 and "deepagent-setup" in ran[-1].metadata.get("tags", [])  # stopped in the setup cell
    assert failed.value.ename == "UsageError"
    message = failed.value.evalue
    assert message == (f"this notebook needs readings (a variable of the notebook run {run_id} ran in): "
                       "define them above this cell, then run it again")  # st and dumps are imported again
    assert "\n" not in message
    assert "import statistics as st" in ran[-1].source and "from json import dumps" in ran[-1].source
