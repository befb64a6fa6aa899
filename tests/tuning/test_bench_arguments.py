"""tuning/bench_arguments.py: the benchmark's arguments checked, one line each, with no DSPy imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deepagent_magics.tuning import bench_arguments
from deepagent_magics.tuning.bench_arguments import BenchError, check_arguments, parse_where
from deepagent_magics.tuning.suites import UnknownSuite

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("arguments, error, says", [
    ({"suite": "nope"}, UnknownSuite, "unknown suite 'nope'"),
    ({"suite": "sklearn", "limit": 0}, BenchError, "--limit must be a whole number of tasks, 1 or more, got 0"),
    ({"suite": "sklearn", "limit": True}, BenchError, "got True"),
    ({"suite": "sklearn", "threads": 2.5}, BenchError, "--threads must be a whole number, 1 or more, got 2.5"),
    ({"suite": "sklearn", "baselines": "cot,gpt, magic"}, BenchError, "unknown baseline gpt, magic"),
])
def test_a_bad_argument_is_one_line(arguments, error, says):
    with pytest.raises(error) as caught:
        check_arguments(**arguments)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_good_arguments_give_the_suite_and_each_baseline_once():
    suite, names = check_arguments("sklearn", 3, " rlm,cot ,rlm", 1)
    assert suite.name == "sklearn" and names == ["rlm", "cot"]


def test_the_deepagents_baseline_without_deepagents_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(bench_arguments, "available", lambda: "ModuleNotFoundError: No module named 'deepagents'")
    with pytest.raises(BenchError, match=r"pip install 'deepagent-magics\[bench\]' \(ModuleNotFoundError"):
        check_arguments("sklearn", baselines=["deepagents"])


def test_where_is_key_equals_value():
    assert parse_where([" level = hard", "half=dev"]) == {"level": "hard", "half": "dev"}
    for bad in ("level", "=hard", "level="):
        with pytest.raises(BenchError, match="write KEY=VALUE"):
            parse_where([bad])


@pytest.mark.subprocess
def test_checking_imports_no_dspy():
    code = ("import sys; from deepagent_magics.tuning.bench_arguments import check_arguments; "
            "check_arguments('sklearn', 1, 'cot,react,rlm', 1); "
            "print([name for name in ('dspy', 'litellm') if name in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
