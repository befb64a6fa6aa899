"""The offline quality suite (``deepagent bench sklearn``): questions over scikit-learn's bundled datasets,
each answered by the suite's reference code, scored by DABstep's rule, with no network at all.

Scripted models drive every system, as in the other suites' tests: an agent that computes the answer
from the notebook variables scores 1, a wrong one 0; a file question also needs its file; the
``llm_query`` question is answered through the sub-LM; the sub-agent question runs in kernels.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from sklearn.datasets import load_diabetes, load_wine
from sklearn.linear_model import LinearRegression

from deepagent_magics import DeepAgent
from deepagent_magics.cli import main
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tuning.bench import run_suite
from deepagent_magics.tuning.suites import get_suite, hub
from deepagent_magics.tuning.suites.sklearn_data import SENTENCES, texts

KINDS = {"aggregate", "groupby", "correlation", "outlier", "model", "file", "llm_query", "subagent"}
CORRELATION_CODE = {  # each correlation question, answered from the notebook variable as a model would
    "strongest (absolute) Pearson": "c = diabetes.drop(columns='target').corrwith(diabetes['target']).abs()\n"
                                    "SUBMIT(result=c.idxmax())",
    "between s1 and s2": "SUBMIT(result=f\"{diabetes['s1'].corr(diabetes['s2']):.3f}\")",
    "Spearman correlation": "SUBMIT(result=f\"{iris['petal length (cm)'].corr(iris['petal width (cm)'], "
                            "method='spearman'):.3f}\")",
    "most correlated": "import numpy as np\nc = wine.drop(columns='target').corr().abs()\n"
                       "c = c.where(~np.eye(len(c), dtype=bool), 0)\na, b = c.stack().idxmax()\nSUBMIT(result=f'{a}, {b}')",
    "above 0.7": "c = breast_cancer.drop(columns='target').corrwith(breast_cancer['target']).abs()\n"
                 "SUBMIT(result=str(int((c > 0.7).sum())))",
    "Which three features": "c = diabetes.drop(columns='target').corrwith(diabetes['target']).abs()\n"
                            "SUBMIT(result=', '.join(c.nlargest(3).index))",
}


def policy_for(code: dict[str, str], wrong: bool = False):
    def policy(request):
        key = next((key for key in code if key in request.task), None)
        if key is None:
            return ("Unknown.", "SUBMIT(result='no idea')")
        return ("Compute.", "SUBMIT(result='3.14159')" if wrong else code[key])

    return policy


def baseline_replies(prompt):
    if "next_tool_name" in prompt:  # ReAct: finish at once
        return {"next_thought": "Finish.", "next_tool_name": "finish", "next_tool_args": {}}
    return {"reasoning": "Guess.", "result": "42"}


@pytest.fixture
def offline(monkeypatch):
    """No download: the hub's functions fail if anything reaches for them."""
    def refuse(*args, **kwargs):
        raise AssertionError("the sklearn suite reached for the network")

    monkeypatch.setattr(hub, "snapshot", refuse)
    monkeypatch.setattr(hub, "dataset_rows", refuse)


def test_the_suite_ships_forty_questions_answered_by_its_reference_code(tmp_path, offline):
    tasks = get_suite("sklearn").load(tmp_path)
    assert len(tasks) >= 40 and len({task.id for task in tasks}) == len(tasks)
    assert {task.meta["kind"] for task in tasks} == KINDS and {task.meta["level"] for task in tasks} == {"easy", "hard"}
    assert {task.meta["kind"] for task in tasks[:8]} == KINDS  # --limit 8 is one question of every kind
    gold = {task.id: task.gold for task in tasks}
    wine, diabetes = load_wine(as_frame=True).frame, load_diabetes(as_frame=True).frame
    assert gold["agg-1"] == str(len(wine)) == "178"
    assert gold["corr-6"] == ", ".join(diabetes.corr()["target"].drop("target").abs().nlargest(3).index) == "bmi, s5, bp"
    x = diabetes.drop(columns="target")
    assert gold["model-1"] == f"{LinearRegression().fit(x, diabetes['target']).score(x, diabetes['target']):.4f}"
    assert gold["query-1"] == str(sum(language == "fr" for language, _ in texts("comments")))
    assert texts("comments") == texts("comments") and len(texts("comments")) == 12  # the same list every time
    assert {kind for kind, _ in texts("tasting_notes")} == {kind for kind, _ in SENTENCES["tasting_notes"]}

    # The answers follow the data: change the table in the suite's folder and the reference answers change.
    table = (tmp_path / "sklearn" / "wine.csv").read_text().splitlines()
    (tmp_path / "sklearn" / "wine.csv").write_text("\n".join(table[:101]) + "\n")
    again = {task.id: task.gold for task in get_suite("sklearn").load(tmp_path)}
    assert again["agg-1"] == "100" and again["agg-2"] != gold["agg-2"]


def test_right_answers_score_one_wrong_zero_beside_cot_react_and_bare_rlm(tmp_path, offline):
    right = run_suite("sklearn", ScriptedLM(policy_for(CORRELATION_CODE), replies=baseline_replies),
                      baselines="cot,react,rlm", threads=2, cache_dir=tmp_path, where={"kind": "correlation"},
                      out=tmp_path / "out")
    summary = right.summary()
    assert list(summary) == ["cot", "react", "rlm", "deep agent"]
    assert summary["deep agent"]["accuracy"] == 1.0 and summary["deep agent"]["tasks"] == 6
    assert summary["rlm"]["accuracy"] == 1.0  # bare dspy.RLM, same REPL and variables, DSPy's own prompt
    assert summary["cot"]["accuracy"] == 0.0 and summary["react"]["accuracy"] == 0.0
    assert all(each["steps_per_task"] >= 1 and each["tokens_per_task"] > 0 for each in summary.values())
    table = right.to_markdown()
    assert "| system | accuracy | steps / task | tokens / task |" in table and "| deep agent | 100.0% (6 scored) | 1.0 |" in table
    assert (tmp_path / "out" / "sklearn-all.md").is_file()

    wrong = run_suite("sklearn", ScriptedLM(policy_for(CORRELATION_CODE, wrong=True)), cache_dir=tmp_path,
                      where={"kind": "correlation"})
    assert wrong.summary()["deep agent"]["accuracy"] == 0.0 and wrong.summary()["deep agent"]["failures"] == 0


def test_the_task_says_the_file_is_in_the_workspace_and_an_agent_that_looks_there_finds_it(tmp_path, offline):
    """The root agent's working directory in the bench is this process's, not the task's workspace: a task
    that promised a file "in the working directory" sent a small model to a file that was not there."""
    seen = []

    def policy(request):
        seen.append(request.task)
        named = re.search(r"the file (\S+\.csv) in the workspace", request.task)
        workspace = re.search(r"^Workspace(?: \(working directory\))?: ([^;\n]+)", request.user, re.M)  # surroundings
        if named is None or workspace is None:
            return ("Lost.", "SUBMIT(result='no idea')")
        path = f"{workspace.group(1)}/{named.group(1)}"
        return ("Read the file.", f"import pandas as pd\nSUBMIT(result=str(len(pd.read_csv({path!r}))))")

    report = run_suite("sklearn", ScriptedLM(policy), cache_dir=tmp_path, where={"kind": "aggregate"}, limit=1)
    assert seen and all("working directory" not in task for task in seen)
    assert report.rows[0]["answer"] == "178" and report.rows[0]["score"] == 1.0


def test_the_root_agent_works_in_the_task_workspace_as_in_a_notebook(tmp_path, offline, monkeypatch):
    """In a notebook the workspace is the kernel's folder; the bench runs many tasks in one process, each
    root agent's steps in its own task's workspace: a relative path finds the task's file."""
    monkeypatch.chdir(tmp_path)
    relative = ("Read the file.", "import pandas as pd\nSUBMIT(result=str(len(pd.read_csv('wine.csv'))))")
    report = run_suite("sklearn", ScriptedLM(lambda request: relative), cache_dir=tmp_path, where={"kind": "aggregate"},
                       limit=1, threads=2)
    assert report.rows[0]["answer"] == "178" and report.rows[0]["score"] == 1.0
    assert os.getcwd() == str(tmp_path)


def test_the_steps_file_shows_why_a_task_failed_without_the_secrets(tmp_path, offline, monkeypatch):
    """A table of zeros says nothing about why: each system's steps go beside its answers, scrubbed."""
    monkeypatch.setenv("BENCH_API_KEY", "sk-bench-5ecret-0123456789")
    lost = [("Load the file.", "import os\nprint('looked for wine.csv in', os.getcwd())\n"
             "print(os.environ.get('BENCH_API_KEY'))"),
            ("Give up.", "SUBMIT(result='no idea')")]
    report = run_suite("sklearn", ScriptedLM(lost, replies=baseline_replies), baselines="react", cache_dir=tmp_path,
                       where={"kind": "aggregate"}, limit=1, out=tmp_path / "out")
    assert report.rows[-1]["score"] == 0.0
    [line] = (tmp_path / "out" / "sklearn-all.deep-agent.steps.jsonl").read_text().splitlines()
    trail = json.loads(line)
    assert trail["task_id"] == report.rows[-1]["task_id"] and trail["score"] == 0.0
    assert [step["code"].splitlines()[0] for step in trail["steps"]] == ["import os", "SUBMIT(result='no idea')"]
    assert "looked for wine.csv in" in trail["steps"][0]["output"]
    assert "5ecret" not in json.dumps(trail)
    react = json.loads((tmp_path / "out" / "sklearn-all.react.steps.jsonl").read_text())
    assert [step["code"].split("(")[0] for step in react["steps"]] == ["finish"]


FILE_ANSWER = "m = iris[iris['target'] == 2]['petal length (cm)'].mean()\n"


def test_a_file_question_counts_only_with_the_file_written(tmp_path, offline):
    without = {"mean of each measurement": FILE_ANSWER + "SUBMIT(result=f'{m:.3f}')"}
    with_file = {"mean of each measurement": FILE_ANSWER + "write_file('iris_means.csv', "
                 "iris.groupby('target').mean().to_csv())\nSUBMIT(result=f'{m:.3f}')"}
    lost = run_suite("sklearn", ScriptedLM(policy_for(without)), cache_dir=tmp_path, where={"kind": "file"}, limit=1)
    kept = run_suite("sklearn", ScriptedLM(policy_for(with_file)), cache_dir=tmp_path, where={"kind": "file"}, limit=1)
    assert lost.rows[0]["answer"] == kept.rows[0]["answer"] == "5.552"
    assert lost.rows[0]["score"] == 0.0 and kept.rows[0]["score"] == 1.0


@pytest.mark.parametrize("system", ["deep agent", "rlm"])
def test_a_file_the_code_wrote_counts_as_a_tools_does(tmp_path, offline, system):
    """The bundled model wrote iris_means.csv with ``df.to_csv`` (its code, in its workspace) and answered 5.552,
    right: it scored 0, because only files written through a tool counted; bare RLM's answer raised in the scorer
    (its trajectory is a list). A file the code wrote counts; one written elsewhere, or a file only read, does not."""
    by_code = {"mean of each measurement": FILE_ANSWER + "iris.groupby('target').mean().to_csv('iris_means.csv')\n"
               "SUBMIT(result=f'{m:.3f}')"}
    elsewhere = {"mean of each measurement": FILE_ANSWER + f"iris.to_csv({str(tmp_path / 'iris_means.csv')!r})\n"
                 "open('iris.csv').read()\nSUBMIT(result=f'{m:.3f}')"}
    for steps, score in ((by_code, 1.0), (elsewhere, 0.0)):
        report = run_suite("sklearn", ScriptedLM(policy_for(steps)), cache_dir=tmp_path, where={"kind": "file"},
                           limit=1, baselines=["rlm"] if system == "rlm" else [], threads=1)
        [row] = [row for row in report.rows if row["system"] == system]
        assert (row["answer"], row["score"]) == ("5.552", score), row


def test_the_llm_query_question_is_answered_through_the_sub_lm(tmp_path, offline):
    language = {text: label for label, text in SENTENCES["comments"]}
    code = {"written in French": "labels = llm_query_batched([f'Which language (fr, en, de, es)? {c}' for c in comments])\n"
                                 "SUBMIT(result=str(sum(label.strip() == 'fr' for label in labels)))"}
    asked: list[str] = []

    def sub_lm(prompt):
        asked.append(prompt)
        return next(label for text, label in language.items() if text in prompt)

    report = run_suite("sklearn", ScriptedLM(policy_for(code), replies=sub_lm), cache_dir=tmp_path,
                       where={"kind": "llm_query"}, limit=1)
    assert report.rows[0]["score"] == 1.0 and len(asked) == 12


def test_the_command_line_runs_the_suite_with_every_baseline(tmp_path, offline, capsys):
    script = tmp_path / "steps.json"
    script.write_text(json.dumps({"steps": [["Count.", "SUBMIT(result=str(len(wine)))"]] * 2,  # rlm's, the agent's
                                  "replies": {"": {"reasoning": "Guess.", "result": "42"}}}))
    status = main(["bench", "sklearn", "--lm", f"scripted:{script}", "--limit", "1", "--baselines", "cot,rlm",
                   "--threads", "1", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert out.startswith("## scikit-learn datasets (offline) (all): 1 tasks, scripted/steps")
    assert "| deep agent | 100.0% (1 scored) | 1.0 |" in out and "| rlm | 100.0% (1 scored) | 1.0 |" in out
    assert "| cot | 0.0% (1 scored) |" in out
    assert "| unknown | unknown |" in out and "$0.0000" not in out  # a scripted model has no price: not $0


def test_the_magic_runs_the_suite(ip, tmp_path, offline):
    ip.user_ns["lm"] = ScriptedLM([("Count.", "SUBMIT(result=str(len(wine)))")])
    report = ip.run_line_magic("deepagent_bench", f"sklearn --lm lm --limit 1 --threads 1 --cache-dir {tmp_path}")
    assert report.summary()["deep agent"]["accuracy"] == 1.0 and "wine" not in ip.user_ns


@pytest.mark.kernel
def test_the_sub_agent_question_fans_out_to_kernels(tmp_path, offline):
    from deepagent_magics.interpreters.pool import KernelPool

    child = ("import pandas as pd\nt = pd.read_csv(task.split('count in ')[1].split(' ')[0])\n"
             "c = t.drop(columns='target').corrwith(t['target']).abs()\nSUBMIT(result=str(int((c > 0.5).sum())))")
    lm = ScriptedLM(scripts={
        "have a sub-agent count": [("Fan out.", "names = ['iris', 'wine', 'diabetes', 'breast_cancer']\n"
                                                "counts = delegate_batched([f'count in {n}.csv the features' for n in names])\n"
                                                "SUBMIT(result=', '.join(counts))")],
        "count in ": [("Count.", child)] * 4})  # one step for each of the four sub-agents
    pool = KernelPool(0)
    try:
        agent = DeepAgent(lm=lm, max_depth=1, pool=pool, max_parallel=2, timeout=120)
        report = run_suite("sklearn", lm, agent=agent, cache_dir=tmp_path, where={"kind": "subagent"}, limit=1)
    finally:
        pool.stop()
    row = report.rows[0]
    assert row["task_id"] == "sub-1" and row["score"] == 1.0, row
    assert row["answer"] == "3, 6, 2, 15"
