"""The harness under what a capable model really wrote: its 48 recorded replies replayed, per agent and
in order (tests/real_model_replay.py), over the same data (scikit-learn's diabetes and wine frames).

Each test is one of the recorded cells. What is asserted is the harness's part, whatever the prompt
says: every recorded step runs, nothing is left over or missing, the errors the model met (a backslash
in an f-string expression on Python 3.11, matplotlib's removed ``boxplot(labels=)``) reach it in the
next request as they did, and each run ends as it did, with the answers that were correct then.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.real_model_replay import Replay, entry
from sklearn.datasets import load_diabetes, load_wine  # the test extra installs scikit-learn (and matplotlib)

from deepagent_magics.interpreters.pool import stop_default_pool

TICKETS = [
    "The app crashes every time I open the camera on Android 14.",
    "How do I change the billing address on my invoices?",
    "I was charged twice for March, please refund one of the payments.",
    "Love the new dark mode, great job team!",
    "After the last update the login page says 'invalid token' and I can't get in.",
    "Could you add an option to export my reports to CSV?",
    "My invoice shows the wrong VAT number for my company.",
    "It would be great to have keyboard shortcuts for the editor.",
    "The password reset email never arrives, I've checked spam.",
    "Thanks, your support team solved my issue in ten minutes.",
]
SALES = [{"region": "North", "q2": 120_000, "q3": 96_500}, {"region": "South", "q2": 88_000, "q3": 91_200},
         {"region": "East", "q2": 143_000, "q3": 118_900}, {"region": "West", "q2": 75_500, "q3": 74_800},
         {"region": "Central", "q2": 101_000, "q3": 109_400}]
SETUP = """import dspy
import pandas as pd
from sklearn.datasets import load_wine, load_diabetes
wine = load_wine(as_frame=True).frame
diabetes = load_diabetes(as_frame=True).frame
"""  # cells/01.py, but the model: each test gives its replay as `frontier`
FSTRING_ERROR = "f-string expression part cannot include a backslash"
BOXPLOT_ERROR = "Axes.boxplot() got an unexpected keyword argument 'labels'"


@pytest.fixture
def notebook(ip, workspace, monkeypatch):
    """The recorded notebook's first cells: the data, and the settings of cell 02; the notebook's folder is
    the workspace, as it was (the root's code reads the files its sub-agents wrote by relative path)."""
    monkeypatch.chdir(workspace)
    os.environ.setdefault("MPLBACKEND", "Agg")
    ip.run_cell(SETUP).raise_error()
    ip.run_line_magic("deepagent_config", "--timeout 300 --max-iters 15 --subagent-timeout 600 --pool-size 0")
    yield ip
    stop_default_pool()


def run_cell(ip, replay: Replay, cell: str):
    ip.user_ns["frontier"] = replay.lm
    result = ip.run_cell(cell)
    result.raise_error()
    return ip.user_ns["_deepagent_run"]


def assert_every_step_ran(run, replay: Replay, ids: list[str]) -> None:
    """The run's steps are the recorded replies, in order, each with the code it had (fence taken off)."""
    assert replay.left() == [], f"recorded replies no agent asked for: {replay.left()}"
    assert len(run.steps) == len(ids)
    for step, number in zip(run.steps, ids):
        assert unfenced(step.code) == unfenced(entry(number)["code"]) and step.finished


def unfenced(code: str) -> str:
    return code.strip().removeprefix("```python").removesuffix("```").strip()


def test_diabetes_the_three_features_correlations_and_report(notebook, workspace):
    replay = Replay("0001", "0005")
    run = run_cell(notebook, replay, "%%deepagent --out findings --lm frontier\nWhich three features of `diabetes` are "
                   "most associated with disease progression (`target`)? Keep the per-feature correlations in a "
                   "variable, write report.md with a table and one sentence per feature, and summarise.")

    assert run.status == "finished" and replay.played == ["0001", "0002", "0003", "0004", "0005"]
    assert_every_step_ran(run, replay, replay.played)
    assert not any(step.output.startswith("[Error]") for step in run.steps), [s.output[:200] for s in run.steps]
    ns = notebook.user_ns
    truth = load_diabetes(as_frame=True).frame
    assert ns["diabetes"].equals(truth)  # the user's frame, untouched
    assert ns["top3_features"] == ["bmi", "s5", "bp"] == truth.corr()["target"].drop("target").abs().nlargest(3).index.tolist()
    assert "independent top 3: ['bmi', 's5', 'bp'] matches: True" in run.steps[3].output
    assert ns["findings"] == run.result and "`bmi` (r = 0.586)" in run.result and "`bp`" in run.result
    report = (workspace / "report.md").read_text()
    assert "| 1 | **bmi** | body mass index | 0.586 |" in report and run.files_written == ["report.md"]
    assert [item["status"] for item in run.todos] == ["completed"] * 4
    record = json.loads((workspace / ".deepagent" / "runs" / f"{run.id}.json").read_text())
    assert record["status"] == "finished" and len(record["steps"]) == 5 and record["result"] == run.result


@pytest.mark.kernel
def test_wine_three_sub_agents_a_syntax_error_each_a_review_then_a_plot_whose_keyword_is_gone(notebook, workspace):
    replay = Replay("0006", "0024")
    run = run_cell(notebook, replay, "%%deepagent --lm frontier\nFor each of the three cultivars (target 0,1,2) in "
                   "`wine`, have a sub-agent find which features most distinguish it from the other two (the sub-agents "
                   "cannot see `wine`: save what they need to the workspace first), then combine their findings into "
                   "wine_report.md.")

    assert run.status == "finished", run.error
    assert_every_step_ran(run, replay, ["0006", "0007", "0008", "0018", "0019", "0020", "0024"])
    subagents, reviewer = run.steps[2].children, run.steps[5].children
    assert sorted(child.task.split("\n")[0][-40:] for child in subagents) == [
        f"cultivar {k} from the other two cultivars." for k in (0, 1, 2)]
    for child in subagents:  # each one's second step hit the f-string error; the model read it and fixed it
        k = child.task.split("cultivar ")[1][0]
        first, failed, fixed = {"0": ("0010", "0014", "0017"), "1": ("0009", "0013", "0016"),
                                "2": ("0011", "0012", "0015")}[k]
        assert child.status == "finished" and len(child.steps) == 3 and child.depth == 1
        assert FSTRING_ERROR in child.steps[1].output and entry(failed)["saw"].removeprefix("[Error] ") in child.steps[1].output
        assert FSTRING_ERROR in replay.requests[fixed] and FSTRING_ERROR not in replay.requests[failed]
        assert child.result.startswith(f"**Cultivar {k} vs the other two**") and "| feature | mean in" in child.result
        assert (workspace / f"cultivar_{k}_features.csv").is_file()
    assert len(reviewer) == 1 and reviewer[0].status == "finished" and len(reviewer[0].steps) == 3
    assert "'status': 'pass'" in run.steps[5].output
    assert notebook.user_ns["wine_review"]["status"] == "pass"
    assert notebook.user_ns["wine"].equals(load_wine(as_frame=True).frame)
    assert "top-5 matches: True" in run.steps[3].output and "top-5 matches: False" not in run.steps[3].output
    assert "- **Cultivar 0**: proline higher (d = +3.11)" in run.result
    assert "## Cultivar 2" in (workspace / "wine_report.md").read_text()

    follow = Replay("0025", "0029")
    plot = run_cell(notebook, follow, "%%deepagent --continue --lm frontier\nNow add a plot of the top feature to the report.")
    assert plot.status == "finished", plot.error
    assert_every_step_ran(plot, follow, ["0025", "0026", "0027", "0028", "0029"])
    assert BOXPLOT_ERROR in plot.steps[1].output and entry("0026")["saw"] in plot.steps[1].output
    assert BOXPLOT_ERROR in follow.requests["0027"] and BOXPLOT_ERROR not in follow.requests["0026"]
    assert "wine_report.md" in plot.steps[0].output  # the earlier turn's file, read through the conversation
    assert notebook.user_ns["top_feature"] == "proline" and (workspace / "proline_by_cultivar.png").stat().st_size > 1000
    assert "## Top feature: proline" in (workspace / "wine_report.md").read_text()
    assert "Added a plot of the top feature, **proline**" in plot.result


def test_tickets_classified_through_llm_query_batched_with_the_recorded_answers(notebook):
    notebook.user_ns["tickets"] = list(TICKETS)
    replay = Replay("0030", "0043")
    run = run_cell(notebook, replay, "%%deepagent --out ticket_summary --lm frontier\nClassify each message in `tickets` "
                   "as bug, billing, feature_request or praise. Keep the labels in a variable aligned with `tickets`, "
                   "and report the counts per label.")

    assert run.status == "finished", run.error
    assert_every_step_ran(run, replay, ["0030", "0031", "0042", "0043"])
    assert sorted(replay.played) == [f"{n:04d}" for n in range(30, 44)]  # every llm_query answered from the recording
    labels = notebook.user_ns["ticket_labels"]
    assert labels == ["bug", "billing", "billing", "praise", "bug", "feature_request", "billing", "feature_request",
                      "bug", "praise"]
    assert "invalid answers: []" in run.steps[1].output
    assert notebook.user_ns["ticket_label_counts"] == {"bug": 3, "billing": 3, "feature_request": 2, "praise": 2}
    assert "| bug | 3 |" in notebook.user_ns["ticket_summary"]
    assert notebook.user_ns["tickets"] == TICKETS
    assert run.usage.lm_calls == 4 + 10  # the four steps and the ten queries, all made by the root


def test_the_quickstart_sales_task(notebook, workspace):
    notebook.user_ns["sales"] = [dict(row) for row in SALES]
    replay = Replay("0044", "0046")
    run = run_cell(notebook, replay, "%%deepagent --lm frontier\nUsing the `sales` table, find the regions whose sales "
                   "fell from Q2 to Q3 and rank them by the\nsize of the drop. Keep the per-region changes in a variable, "
                   "write report.md with a Markdown\ntable of every region, and give me a short summary.")

    assert run.status == "finished", run.error
    assert_every_step_ran(run, replay, ["0044", "0045", "0046"])
    assert run.result.startswith("**3 of 5 regions fell from Q2 to Q3.** Ranked by the size of the drop: "
                                 "East (-24,100), North (-23,500), West (-700).")
    assert "| East | 143,000 | 118,900 | -24,100 | -16.9% |" in (workspace / "report.md").read_text()
    assert notebook.user_ns["sales"] == SALES


@pytest.mark.subprocess
def test_the_command_line_run_on_diabetes(tmp_path):
    """``deepagent run`` from the shell, the recorded replies as a ``scripted:`` file, the data as ``--load``."""
    load_diabetes(as_frame=True).frame.to_csv(tmp_path / "diabetes.csv", index=False)
    steps = [{"reasoning": entry(n)["reasoning"], "code": entry(n)["code"]} for n in ("0047", "0048")]
    (tmp_path / "replies.json").write_text(json.dumps(steps))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    env.pop("DEEPAGENT_LM", None)
    done = subprocess.run([sys.executable, "-m", "deepagent_magics", "run", "Compare the mean target of patients with "
                           "bmi above its median against those at or below it.", "--lm", "scripted:replies.json",
                           "--load", "diabetes=diabetes.csv", "--json", "--quiet"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "finished" and len(record["steps"]) == 2
    assert "bmi above median          219  191.5" in record["steps"][0]["output"]
    assert "**191.5** (n = 219), against **113.5**" in record["result"]
