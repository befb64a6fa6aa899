"""tuning/bench.py: the quality benchmark's arguments checked before anything runs, and a suite run to its table
(the suites and front doors at length: tests/adversarial/test_bench_*.py)."""

from __future__ import annotations

import json
import os

import pytest

from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tuning.bench import BenchError, check_arguments, examples_for, parse_where, run_suite
from deepagent_magics.tuning.suites import UnknownSuite, get_suite


@pytest.mark.parametrize("kwargs, says", [({"limit": 0}, "--limit must be a whole number of tasks"),
                                          ({"limit": True}, "--limit"), ({"threads": 2.5}, "--threads"),
                                          ({"baselines": "cot,nope"}, "unknown baseline nope")])
def test_bad_arguments_are_one_line(kwargs, says):
    with pytest.raises(BenchError, match=says):
        check_arguments("sklearn", **kwargs)
    with pytest.raises(UnknownSuite):
        check_arguments("nope")


def test_baselines_are_read_from_a_list_or_commas_once_each():
    suite, names = check_arguments("sklearn", baselines=["cot, react", "cot"])
    assert suite.name == "sklearn" and names == ["cot", "react"]


def test_where_is_key_equals_value():
    assert parse_where(["level=hard", " dataset = trec "]) == {"level": "hard", "dataset": "trec"}
    with pytest.raises(BenchError, match="write KEY=VALUE"):
        parse_where(["level"])


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
