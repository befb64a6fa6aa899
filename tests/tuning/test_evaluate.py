"""%deepagent_eval: the deep agent and baselines on notebook examples, scored by a notebook metric."""

from __future__ import annotations

import os
import re

import dspy
import pytest
from IPython.core.error import UsageError

from deepagent_magics.tuning import programs
from deepagent_magics.tuning import Evaluation
from deepagent_magics.core.loop.profiles import available_profiles
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tuning.evaluate import evaluate
from deepagent_magics.tuning.systems import Outcome

DEVSET = [
    {"task": "Double 2", "answer": "4"},
    {"task": "Double 5", "answer": "10"},
    {"task": "Double 7", "answer": "14"},
    dspy.Example(task="Double 9", answer="18"),
]


@pytest.fixture(autouse=True)
def _reset_programs():
    yield
    for profile in available_profiles():
        programs.reset(profile)


def number(task: str) -> int:
    return int(re.search(r"Double (\d+)", task).group(1))


def agent_policy(request):
    """Two steps: write a scratch file and look at the workspace, then answer (wrong for 7)."""
    n = number(request.task)
    if "Step 1" not in request.user:
        return ("Scratch work.", f"write_file('scratch.txt', 'n={n}')\nseen = glob('*')\nprint(seen)")
    answer = 2 * n if n != 7 else 0
    return ("Answer.", f"SUBMIT(result='{answer} files=' + str(len(seen)))")


def baseline_replies(prompt):
    """CoT doubles correctly only for 2; ReAct finishes at once and answers 'no idea'."""
    match = re.search(r"Double (\d+)", prompt)
    n = int(match.group(1)) if match else 0
    if "next_tool_name" in prompt:
        return {"next_thought": "Finish.", "next_tool_name": "finish", "next_tool_args": "{}"}
    if "[[ ## trajectory ## ]]" in prompt:  # ReAct's extract step
        return {"reasoning": "Done.", "result": "no idea"}
    return {"reasoning": "Double it.", "result": str(2 * n if n == 2 else n)}


def exact(example, pred):
    return float(str(pred.result).split()[0] == example.answer)


def setup(ip, metric=exact, devset=DEVSET):
    ip.user_ns.update(dev=devset, exact=metric, lm=ScriptedLM(agent_policy, replies=baseline_replies))


def test_the_table_matches_a_deterministic_metric_with_baselines(ip, capsys):
    setup(ip)
    table = ip.run_line_magic("deepagent_eval", "--devset dev --metric exact --baselines cot,react "
                                                "--threads 3 --lm lm --out scores")
    assert isinstance(table, Evaluation) and ip.user_ns["scores"] is table and ip.user_ns["_deepagent_eval"] is table
    assert table.systems == ["cot", "react", "deep agent"]
    scores = {(row["system"], row["example"]): row["score"] for row in table.rows}
    assert [scores["deep agent", i] for i in range(4)] == [1.0, 1.0, 0.0, 1.0]
    assert [scores["cot", i] for i in range(4)] == [1.0, 0.0, 0.0, 0.0]
    assert [scores["react", i] for i in range(4)] == [0.0, 0.0, 0.0, 0.0]
    means = table.means()
    assert means["deep agent"]["score"] == 0.75 and means["cot"]["score"] == 0.25 and means["react"]["score"] == 0
    deep = [row for row in table.rows if row["system"] == "deep agent"]
    assert all(row["steps"] == 2 and row["tokens"] > 0 and row["error"] is None for row in deep)
    assert all(row["steps"] == 1 for row in table.rows if row["system"] in ("cot", "react"))
    assert all(row["tokens"] > 0 for row in table.rows)
    # Each run had its own workspace (one file in it) and a fresh namespace (nothing leaked to the notebook).
    assert all(row["result"].endswith("files=1") for row in deep)
    assert "seen" not in ip.user_ns
    text = repr(table)
    assert "deep agent: score" in text and "mean" in text.splitlines()[-1]
    assert "0.75" in text.splitlines()[-1] and "<table>" in table._repr_html_()
    assert "deepagent_eval: [####################] 12/12" in capsys.readouterr().out


def test_a_metric_that_raises_on_one_example_scores_it_zero_and_says_so(ip, capsys):
    def fragile(example, pred, trace=None):
        if example.answer == "10":
            raise KeyError("no gold for 10")
        return exact(example, pred)

    setup(ip, metric=fragile)
    table = ip.run_line_magic("deepagent_eval", "--devset dev --metric exact --lm lm")
    rows = {row["example"]: row for row in table.rows}
    assert rows[1]["score"] == 0.0 and "exact raised KeyError" in rows[1]["error"]
    assert [rows[i]["score"] for i in (0, 2, 3)] == [1.0, 0.0, 1.0] and rows[0]["error"] is None
    out = capsys.readouterr().out
    assert "exact raised on 1 of 4 runs; those score 0" in out
    assert "! #1 deep agent: exact raised KeyError" in repr(table)


def test_a_metric_may_return_a_score_with_feedback(ip):
    setup(ip, metric=lambda example, pred: dspy.Prediction(score=0.5, feedback="half right"))
    table = ip.run_line_magic("deepagent_eval", "--devset dev --metric exact --lm lm")
    assert table.score() == 0.5


@pytest.mark.parametrize("line, names, message", [
    ("--devset missing --metric exact", {}, "--devset missing: there is no notebook variable 'missing'"),
    ("--devset dev --metric nothing", {}, "--metric nothing: there is no notebook variable 'nothing'"),
    ("--devset bad --metric exact", {"bad": {"task": "x"}}, "bad must be a list of examples"),
    ("--devset bad --metric exact", {"bad": [1, 2]}, r"bad\[0\] is a int"),
    ("--devset bad --metric exact", {"bad": [{"question": "2+2?"}]}, r"bad\[0\] has no 'task'"),
    ("--devset bad --metric exact", {"bad": []}, "bad is empty"),
    ("--devset dev --metric answer", {"answer": 42}, "'answer' is a int, not a function"),
    ("--devset dev --metric exact --baselines cot,magic", {}, "unknown magic"),
    ("--devset dev --metric exact --threads 0", {}, "--threads must be positive"),
])
def test_evaluation_mistakes_are_one_line_usage_errors(ip, line, names, message):
    setup(ip)
    ip.user_ns.update(names)
    with pytest.raises(UsageError, match=message):
        ip.run_line_magic("deepagent_eval", line + " --lm lm")


def test_a_metric_that_fails_everywhere_and_a_missing_lm_are_usage_errors(ip):
    setup(ip, metric=lambda example, pred: example.nonexistent_field)
    with pytest.raises(UsageError, match="the metric failed on every example.*fix --metric exact"):
        ip.run_line_magic("deepagent_eval", "--devset dev --metric exact --lm lm")
    with pytest.raises(UsageError, match="No LM configured"):
        ip.run_line_magic("deepagent_eval", "--devset dev --metric exact")


def test_a_system_that_raised_costs_unknown_not_zero():
    """A failed task may have spent before it raised: its cost is unknown, and a local model's table says
    "unknown" even when one task failed (it said $0.0000)."""
    from deepagent_magics.tuning.bench_report import BenchReport
    from deepagent_magics.tuning.evaluate import evaluate
    from deepagent_magics.tuning.systems import Outcome

    def system(example):
        if example.task == "fails":
            raise FileNotFoundError("gone")
        return Outcome(dspy.Prediction(result="ok"), 1, 10, cost=None)  # a local model: no price

    examples = [dspy.Example(task=task).with_inputs("task") for task in ("works", "fails")]
    table = evaluate({"deep agent": system}, examples, lambda example, pred: 1.0, threads=1)
    assert [row["cost"] for row in table.rows] == [None, None]
    rows = [{**row, "task_id": str(row["example"]), "scored": True, "answer": row["result"]} for row in table.rows]
    report = BenchReport("s", "S", "all", "local", "accuracy", ["deep agent"], rows)
    assert report.summary()["deep agent"]["cost"] is None and "| unknown | unknown |" in report.to_markdown()


def test_an_evaluation_works_with_the_bundled_price_list_and_puts_the_environment_back(monkeypatch):
    """The baselines call the LM outside a DeepAgent run: the evaluation itself keeps them offline."""
    from deepagent_magics.core.model.price_list import VARIABLE
    from deepagent_magics.tuning.evaluate import evaluate
    from deepagent_magics.tuning.systems import Outcome

    monkeypatch.delenv(VARIABLE, raising=False)
    seen = []

    def system(example):
        seen.append(os.environ.get(VARIABLE))
        return Outcome(dspy.Prediction(result="4"), 1, 0, None)

    evaluate({"probe": system}, [dspy.Example(task="Double 2", answer="4").with_inputs("task")],
             lambda example, pred: 1.0, threads=1)
    assert seen == ["True"] and VARIABLE not in os.environ


def test_each_row_is_handed_on_as_it_is_done_so_a_run_that_stops_keeps_what_it_had():
    """A benchmark of hours keeps each finished row (``on_row``) though the run is stopped before the end."""
    def answers(example):
        if example.task == "stop":
            raise KeyboardInterrupt  # the user's ^C while the third task runs
        return Outcome(dspy.Prediction(result=example.task), 1, 10)

    done = []
    examples = [dspy.Example(task=task, answer=task).with_inputs("task") for task in ("a", "b", "stop", "d")]
    with pytest.raises(KeyboardInterrupt):
        evaluate({"echo": answers}, examples, exact, threads=1, on_row=done.append)
    assert [(row["task"], row["score"]) for row in done] == [("a", 1.0), ("b", 1.0)]


def test_a_run_goes_question_by_question_so_a_stopped_one_compares_the_systems_on_the_same_questions():
    """Every system answers a question before any starts the next: stopped in its second question, the
    run has all systems on the first (system by system, it had the first system on all and the rest on none)."""
    called = []

    def system(name):
        def answer(example):
            if example.task == "b" and name == "deep agent":
                raise KeyboardInterrupt  # stopped while the last system works on the second question
            called.append((name, example.task))
            return Outcome(dspy.Prediction(result=example.task), 1, 10)
        return answer

    examples = [dspy.Example(task=task, answer=task).with_inputs("task") for task in ("a", "b", "c")]
    done = []
    with pytest.raises(KeyboardInterrupt):
        evaluate({name: system(name) for name in ("cot", "react", "deep agent")}, examples, exact, threads=1,
                 on_row=done.append)
    assert called[:5] == [("cot", "a"), ("react", "a"), ("deep agent", "a"), ("cot", "b"), ("react", "b")]
    assert sorted((row["system"], row["task"]) for row in done if row["task"] == "a") == [
        ("cot", "a"), ("deep agent", "a"), ("react", "a")]
