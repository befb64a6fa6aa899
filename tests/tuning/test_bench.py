"""tuning/bench.py: a suite run to its table, kept as it goes and when it is stopped (its arguments:
test_bench_arguments.py; the suites and front doors at length: tests/adversarial/test_bench_*.py)."""

from __future__ import annotations

import json
import os

import pytest

from deepagent_magics.testing import ScriptedLM
import dspy

from deepagent_magics.tuning import bench
from deepagent_magics.tuning.bench import BenchStopped, examples_for, run_suite
from deepagent_magics.tuning.suites import get_suite
from deepagent_magics.tuning.systems import Outcome


def test_a_suites_tasks_become_examples_and_a_run_scores_them(tmp_path):
    tasks = get_suite("sklearn").load(None, None, 1, None)
    [example] = examples_for(tasks)
    assert example.task == tasks[0].prompt and example.bench_task is tasks[0] and set(example.inputs().keys()) == {"task"}
    report = run_suite("sklearn", ScriptedLM([("Guess.", "SUBMIT(result='no idea')")]), limit=1, threads=1,
                       out=tmp_path / "out")
    assert report.rows[0]["system"] == "deep agent" and report.rows[0]["score"] == 0.0
    assert report.files and (tmp_path / "out").is_dir()


def test_four_systems_on_the_development_half_each_row_kept_as_it_is_done_with_tokens_endings_and_the_machine(tmp_path):
    """A scripted model that answers 178 (agg-1's answer) everywhere: the systems in one run, on the development half's
    first two questions; each row on disk the moment it is done, with its steps; the result file says what the run
    spent and against what load."""
    replies = {"reasoning": "r", "result": "178", "next_thought": "done", "next_tool_name": "finish",
               "next_tool_args": "{}"}
    lm = ScriptedLM(lambda request: ("Count.", "print('counted', 178)\nSUBMIT(result='178')"),
                    replies=lambda prompt: replies, tokens=(100, 10))
    report = run_suite("sklearn", lm, limit=2, baselines=["cot", "react", "rlm"], threads=1, out=tmp_path,
                       where={"half": "dev"})
    assert report.systems == ["cot", "react", "rlm", "deep agent"]
    assert {(row["task_id"], row["half"]) for row in report.rows} == {("agg-1", "dev"), ("group-1", "dev")}
    assert {row["task_id"]: row["score"] for row in report.rows if row["system"] == "deep agent"} == {
        "agg-1": 1.0, "group-1": 0.0}
    agent = [row for row in report.rows if row["system"] == "deep agent"]
    assert all(row["ending"] == "SUBMIT" and (row["prompt_tokens"], row["completion_tokens"]) == (100, 10)
               for row in agent)
    done = [json.loads(line) for line in (tmp_path / "sklearn-all.done.jsonl").read_text().splitlines()]
    assert sorted((row["system"], row["task_id"]) for row in done) == sorted(
        (row["system"], row["task_id"]) for row in report.rows)
    kept = next(row for row in done if row["system"] == "deep agent" and row["task_id"] == "agg-1")
    assert kept["score"] == 1.0 and "print('counted', 178)" in kept["steps_taken"][0]["code"]
    assert "SUBMIT({'result': '178'})" in kept["steps_taken"][0]["output"]
    machine = json.loads((tmp_path / "sklearn-all.json").read_text())["machine"]
    assert machine["wall_seconds"] >= 0 and machine["cpu_seconds"] > 0 and machine["cpus"] == os.cpu_count()


def interrupted_on(task_id):
    """Two systems that answer until the user's ^C comes while one works on ``task_id``."""
    def system(name):
        def answer(example):
            if example.bench_task.id == task_id and name == "cot":
                raise KeyboardInterrupt
            return Outcome(dspy.Prediction(result="178"), 1, 10, ending="SUBMIT" if name == "deep agent" else None)
        return answer
    return lambda agent, names, lm=None: {name: system(name) for name in ("cot", "deep agent")}


def test_an_interrupted_run_keeps_the_table_of_what_it_did_with_its_files_and_the_machine(tmp_path, monkeypatch):
    """^C an hour into a benchmark: the answers done are a table (and its files, the machine figures), not a
    traceback and a half-written log; the run says how far it got."""
    monkeypatch.setattr(bench, "systems_for", interrupted_on("group-1"))
    with pytest.raises(BenchStopped) as caught:
        run_suite("sklearn", ScriptedLM([]), limit=3, baselines=["cot"], threads=1, out=tmp_path,
                  where={"half": "dev"})
    report = caught.value.report
    assert isinstance(caught.value, KeyboardInterrupt) and report.stopped == "after 2 of 6 answers"
    assert [(row["system"], row["task_id"], row["score"]) for row in report.rows] == [
        ("cot", "agg-1", 1.0), ("deep agent", "agg-1", 1.0)]
    written = json.loads((tmp_path / "sklearn-all.json").read_text())
    assert written["stopped"] == "after 2 of 6 answers" and written["machine"]["wall_seconds"] >= 0
    assert "(stopped after 2 of 6 answers)" in (tmp_path / "sklearn-all.md").read_text()
    assert bench.BenchReport.read(tmp_path / "sklearn-all.json").stopped == "after 2 of 6 answers"
