"""tuning/bench.py: the quality benchmark's arguments checked before anything runs, and a suite run to its table
(the suites and front doors at length: tests/adversarial/test_bench_*.py)."""

from __future__ import annotations

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
